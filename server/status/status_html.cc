#include "server/status/status_html.h"

namespace clickd::status {

const std::string_view kStatusPageHtml = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>clickd status</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 16px; color: #222; background: #fafafa; }
h1 { font-size: 20px; margin: 0 0 4px; }
#summary { color: #666; margin-bottom: 4px; }
#load { color: #666; margin-bottom: 12px; }
body[data-state="error"] #summary { color: #b00; }
section { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 10px 14px;
          margin-bottom: 14px; }
h2 { font-size: 16px; margin: 0 0 6px; font-family: ui-monospace, monospace; word-break: break-all; }
table { border-collapse: collapse; margin-bottom: 8px; }
td { padding: 1px 12px 1px 0; vertical-align: top; }
td:first-child { color: #666; }
.charts { display: flex; flex-wrap: wrap; gap: 10px; }
.chart { font-size: 12px; color: #444; }
canvas { display: block; width: 360px; height: 160px; border: 1px solid #eee; background: #fff; }
.legend span { display: inline-block; width: 18px; border-top: 2px solid #1f6fd1; margin: 0 4px 3px 8px; }
.legend span.dashed { border-top: 2px dashed #e07b00; }
</style>
</head>
<body data-state="loading" data-polls="0">
<h1>clickd status</h1>
<div id="summary">loading /status.json ...</div>
<div id="load"></div>
<div id="models"></div>
<script>
"use strict";
const POLL_MS = 2000;
const MAX_POINTS = 1800;  // per model in this page: an hour at 2 s
const FIELDS = ["t", "update_examples", "predictions", "logloss", "auc", "calibration",
                "recent_logloss", "recent_auc", "recent_calibration"];
const CHARTS = [["logloss", "Progressive logloss"], ["auc", "Progressive AUC"],
                ["calibration", "Calibration (sum p / sum y)"]];
const histories = new Map();  // model name -> {field: [values]}
const sections = new Map();   // model name -> its DOM elements
let lastT = 0;
let polls = 0;

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function fmt(x, digits) {
  if (x === null || x === undefined || !isFinite(x)) return "-";
  return Number(x).toFixed(digits === undefined ? 4 : digits);
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + " " + units[i];
}

function merge(model) {
  let h = histories.get(model.name);
  const p = model.points;
  // A model deleted and created again under its name counts from zero.
  if (h && p.t.length > 0 && h.update_examples.length > 0 &&
      p.update_examples[0] < h.update_examples[h.update_examples.length - 1]) h = undefined;
  if (!h) {
    h = {};
    for (const f of FIELDS) h[f] = [];
    histories.set(model.name, h);
  }
  const last = h.t.length ? h.t[h.t.length - 1] : -Infinity;
  for (let i = 0; i < p.t.length; i++) {
    if (p.t[i] <= last) continue;
    for (const f of FIELDS) h[f].push(p[f][i]);
    if (p.t[i] > lastT) lastT = p.t[i];
  }
  const extra = h.t.length - MAX_POINTS;
  if (extra > 0) for (const f of FIELDS) h[f].splice(0, extra);
  return h;
}

function makeSection(name) {
  const s = {root: el("section", {"data-model": name})};
  s.root.appendChild(el("h2", {}, name));
  s.table = el("table");
  s.root.appendChild(s.table);
  const charts = el("div", {"class": "charts"});
  s.canvases = {};
  for (const [key, title] of CHARTS) {
    const box = el("div", {"class": "chart"});
    box.appendChild(el("div", {}, title));
    const canvas = el("canvas", {"data-chart": key, "data-points": "0", width: 360, height: 160});
    box.appendChild(canvas);
    const legend = el("div", {"class": "legend"});
    legend.appendChild(el("span"));
    legend.appendChild(document.createTextNode("recent window"));
    legend.appendChild(el("span", {"class": "dashed"}));
    legend.appendChild(document.createTextNode("since start"));
    box.appendChild(legend);
    charts.appendChild(box);
    s.canvases[key] = canvas;
  }
  s.root.appendChild(charts);
  return s;
}

function fillTable(table, m) {
  const c = m.config;
  const hyper = Object.entries(c.hyperparameters).map(([k, v]) => k + "=" + v).join(", ");
  const rows = [
    ["optimizer", c.optimizer + " (" + hyper + ")"],
    ["loss", c.loss],
    ["hashing", (c.hash_bits ? c.hash_bits + " bits" : "64-bit keys") + ", bias " + c.bias +
                ", " + c.interactions + " interaction(s), " + c.shards + " shards" +
                (c.dense_namespaces ? ", " + c.dense_namespaces + " dense namespace(s)" : "")],
    ["size", m.coordinates + " coordinates, " + bytes(m.bytes)],
    ["learned", m.update_examples + " examples, " + fmt(m.update_rate, 1) + "/s"],
    ["predictions", m.predictions + " candidates, " + fmt(m.prediction_rate, 1) + "/s"],
    ...(m.kafka ? [["kafka", "topic " + m.kafka.topic + ", " + m.kafka.partitions +
                             " partition(s) here, lag " + m.kafka.lag_records + " records"]] : []),
    ["recent window", "logloss " + fmt(m.recent.logloss) + ", AUC " + fmt(m.recent.auc) +
                      ", calibration " + fmt(m.recent.calibration) + " (" + m.recent.examples +
                      " examples)"],
    ["since start", "logloss " + fmt(m.lifetime.logloss) + ", AUC " + fmt(m.lifetime.auc) +
                    ", calibration " + fmt(m.lifetime.calibration) + " (" + m.lifetime.examples +
                    " examples)"],
  ];
  table.replaceChildren();
  for (const [k, v] of rows) {
    const tr = el("tr");
    tr.appendChild(el("td", {}, k));
    tr.appendChild(el("td", {}, v));
    table.appendChild(tr);
  }
}

// Draws the recent and since-start series of one figure; returns the number
// of points drawn (finite values).
function draw(canvas, h, key) {
  const ctx = canvas.getContext("2d");
  const W = canvas.width, H = canvas.height, L = 48, R = 8, T = 8, B = 20;
  ctx.clearRect(0, 0, W, H);
  const series = [[h["recent_" + key], "#1f6fd1", []], [h[key], "#e07b00", [5, 4]]];
  let lo = Infinity, hi = -Infinity, drawn = 0;
  for (const [ys] of series) {
    for (const y of ys) if (y !== null && isFinite(y)) { lo = Math.min(lo, y); hi = Math.max(hi, y); }
  }
  const t = h.t;
  ctx.font = "11px sans-serif";
  ctx.fillStyle = "#888";
  if (!(lo <= hi) || t.length === 0) {
    ctx.fillText("no data yet", L + 10, H / 2);
    return 0;
  }
  if (hi - lo < 1e-9) { hi += 0.01; lo -= 0.01; }
  const pad = (hi - lo) * 0.08;
  lo -= pad; hi += pad;
  const t0 = t[0], t1 = Math.max(t[t.length - 1], t0 + 1);
  const x = (ti) => L + (W - L - R) * (ti - t0) / (t1 - t0);
  const y = (v) => T + (H - T - B) * (hi - v) / (hi - lo);
  ctx.strokeStyle = "#eee";
  ctx.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const v = lo + (hi - lo) * i / 4;
    ctx.beginPath(); ctx.moveTo(L, y(v)); ctx.lineTo(W - R, y(v)); ctx.stroke();
    ctx.fillText(v.toFixed(3), 2, y(v) + 4);
  }
  const span = t1 - t0;
  ctx.fillText(span >= 120 ? "-" + (span / 60).toFixed(0) + " min" : "-" + span.toFixed(0) + " s",
               L, H - 5);
  ctx.fillText("now", W - R - 22, H - 5);
  for (const [ys, color, dash] of series) {
    ctx.strokeStyle = color;
    ctx.fillStyle = color;
    ctx.lineWidth = 1.5;
    ctx.setLineDash(dash);
    ctx.beginPath();
    let pen = false, n = 0;
    for (let i = 0; i < t.length; i++) {
      const v = ys[i];
      if (v === null || !isFinite(v)) { pen = false; continue; }
      if (pen) ctx.lineTo(x(t[i]), y(v)); else ctx.moveTo(x(t[i]), y(v));
      pen = true;
      n++;
    }
    ctx.stroke();
    ctx.setLineDash([]);
    // A lone point would draw nothing: mark the last one.
    for (let i = t.length - 1; i >= 0; i--) {
      if (ys[i] !== null && isFinite(ys[i])) {
        ctx.beginPath(); ctx.arc(x(t[i]), y(ys[i]), 2.5, 0, 2 * Math.PI); ctx.fill();
        break;
      }
    }
    drawn = Math.max(drawn, n);
  }
  return drawn;
}

// The server's load beside its limits (null: this server reports none).
function showLoad(load) {
  const e = document.getElementById("load");
  if (!load) { e.textContent = ""; return; }
  // Each figure also as an attribute (queued_calls: data-queued-calls).
  for (const [key, value] of Object.entries(load)) {
    e.dataset[key.replace(/_(.)/g, (_, c) => c.toUpperCase())] = String(value);
  }
  e.textContent = "Load: " + load.running_calls + " call(s) running on " + load.worker_threads +
      " worker(s), " + load.queued_calls + " of " + load.max_queued_calls + " queued; " +
      load.open_streams + " of " + load.max_open_streams + " stream(s) open";
}

function render(report) {
  const names = new Set();
  const container = document.getElementById("models");
  for (const m of report.models) {
    names.add(m.name);
    const h = merge(m);
    let s = sections.get(m.name);
    if (!s) {
      s = makeSection(m.name);
      sections.set(m.name, s);
    }
    container.appendChild(s.root);  // keeps the server's order (by name)
    fillTable(s.table, m);
    for (const [key] of CHARTS) {
      s.canvases[key].dataset.points = String(draw(s.canvases[key], h, key));
    }
  }
  for (const [name, s] of sections) {
    if (!names.has(name)) { s.root.remove(); sections.delete(name); histories.delete(name); }
  }
  document.body.dataset.models = String(report.models.length);
  showLoad(report.load);
  document.getElementById("summary").textContent =
      report.models.length + " model(s); updated " + new Date(report.unix_seconds * 1000).toLocaleTimeString() +
      "; the server samples every " + report.sample_interval_seconds + " s and keeps " +
      report.max_points + " points per model";
}

async function poll() {
  try {
    const response = await fetch("status.json?since=" + lastT, {cache: "no-store"});
    if (!response.ok) throw new Error("HTTP " + response.status);
    render(await response.json());
    document.body.dataset.state = "ok";
  } catch (e) {
    document.body.dataset.state = "error";
    document.getElementById("summary").textContent = "cannot read /status.json: " + e.message;
  }
  document.body.dataset.polls = String(++polls);
  setTimeout(poll, POLL_MS);
}
poll();
</script>
</body>
</html>
)HTML";

}  // namespace clickd::status
