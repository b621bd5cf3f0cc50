#!/usr/bin/python3
"""Runs the dashboard's queries and the alert rules against a real scrape of clickd.

  check_live.py CLICKD CLICKCTL

Starts the built clickd (gRPC and /metrics on free loopback ports, a data
directory with snapshots every second, so that the durability series exist,
and a model with the impression-to-click loop beside the default one), a real
Prometheus (the Debian package) scraping it every second with
deploy/prometheus/rules/clickd_alerts.yml loaded, and sends a few Updates and
Predicts (one of them to a missing model) with clickctl. Then fails unless:
  - Prometheus's scrape of clickd is up and every alert rule evaluates
    without error (health "ok");
  - every query of deploy/grafana/clickd.json, with the Grafana variables set
    to "all", runs without error and returns series.
So the dashboard and rules agree with the exporter's real names and labels,
which the static checks (check_dashboard.py, check_alerts.py) cannot see.

Replication: when the clickd binary has --replication and nats-server is
installed, a single JetStream nats-server (loopback, free port, store in the
work directory) is started too and clickd runs with --replication=jetstream
--nats_replicas=1, so the replication panels must return series; the queries
that name only the file update log's metrics (FILE_LOG_METRICS) may then be
empty. Otherwise clickd runs with the file log and the replication panels
(promql_names.REPLICATION) may be empty; each such query is listed.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import promql_names  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DASHBOARD = os.path.join(ROOT, "deploy/grafana/clickd.json")
RULES = os.path.join(ROOT, "deploy/prometheus/rules/clickd_alerts.yml")
DEADLINE_SECONDS = 60
# The file update log's own series (--replication=none), which a server
# replicating through JetStream need not have, and the restore of a model
# directory (a replica restores every model from one replica snapshot and
# logs it instead).
FILE_LOG_METRICS = {"clickd_update_log_bytes", "clickd_update_log_lag_records",
                    "clickd_update_log_sync_duration_seconds", "clickd_restore_duration_seconds",
                    "clickd_restore_rejected_snapshots"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, what, timeout=DEADLINE_SECONDS):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise TimeoutError(f"timed out waiting for {what}")


def dashboard_queries():
    with open(DASHBOARD) as f:
        dash = json.load(f)

    def panels(items):
        for p in items:
            yield p
            yield from panels(p.get("panels", []))

    for panel in panels(dash["panels"]):
        for target in panel.get("targets", []):
            expr = target["expr"].replace("$__rate_interval", "1m")
            expr = re.sub(r"\$\{?\w+\}?", ".*", expr)
            yield f"{panel['title']} {target['refId']}", expr


def may_be_empty(expr, replication):
    """Returns why expr may return no series in this run, or ''."""
    metrics = {promql_names.base_metric(m) for m in promql_names.names_in(expr)[0]}
    if not replication and metrics and metrics <= promql_names.REPLICATION:
        return "replication is off in this run"
    if metrics and metrics <= promql_names.VARIANTS:
        return "no model of this run has variants"
    if metrics and metrics <= promql_names.KAFKA:
        return "no model of this run learns from a Kafka topic"
    if metrics and metrics <= promql_names.CALIBRATION_PENDING:
        return "the calibrated model of this run has no click yet, nor a fit"
    if replication and metrics and metrics <= FILE_LOG_METRICS:
        return "the file update log is not used with --replication=jetstream"
    return ""


def start_nats(work, procs):
    """Starts a JetStream nats-server on a free loopback port; returns its URL, or None."""
    nats_server = shutil.which("nats-server") or (
        "/usr/local/bin/nats-server" if os.access("/usr/local/bin/nats-server", os.X_OK) else None)
    if not nats_server:
        return None
    port = free_port()
    log, conf = os.path.join(work, "nats.log"), os.path.join(work, "nats.conf")
    with open(conf, "w") as f:  # as deploy/k8s/nats-configmap.yaml, one server
        f.write(f"listen: 127.0.0.1:{port}\nmax_payload: 8MB\n"
                f"jetstream {{\n  store_dir: {os.path.join(work, 'nats')}\n}}\n")
    procs.append(subprocess.Popen([nats_server, "-c", conf], stdout=open(log, "w"), stderr=subprocess.STDOUT))
    wait_for(lambda: "Server is ready" in open(log).read(), "nats-server to start")
    return f"nats://127.0.0.1:{port}"


class Prometheus:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}/api/v1/"

    def get(self, path, **params):
        url = self.base + path + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.load(r)
        except (OSError, ValueError) as e:
            return {"status": "error", "error": str(e)}

    def query(self, expr):
        return self.get("query", query=expr)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    clickd, clickctl = sys.argv[1], sys.argv[2]
    prometheus_bin = shutil.which("prometheus")
    if not prometheus_bin:
        print("check_live: prometheus not installed (Debian package prometheus)")
        return 1
    work = tempfile.mkdtemp(prefix="clickd-live-")
    procs = []
    errors = []
    try:
        metrics_port, prom_port = free_port(), free_port()
        help_text = subprocess.run([clickd, "--helpfull"], capture_output=True, text=True, timeout=30)
        replication_args = []
        if re.search(r"^\s+--replication \(", help_text.stdout + help_text.stderr, re.M):
            nats_url = start_nats(work, procs)
            if nats_url:
                replication_args = ["--replication=jetstream", f"--nats_url={nats_url}", "--nats_replicas=1"]
        print("check_live: clickd runs with " +
              (" ".join(replication_args) if replication_args else "the file log (no replication)"))
        out = open(os.path.join(work, "clickd.out"), "w+")
        # Beside the default model, one with the impression-to-click loop
        # and online calibration, so that their series exist.
        models = os.path.join(work, "models.json")
        with open(models, "w") as f:
            json.dump({"models": [{"name": "loop", "feedback": {"ttl_seconds": 3600},
                                   "calibration": {"enabled": True}}]}, f)
        procs.append(subprocess.Popen(
            [clickd, "--address=127.0.0.1:0", "--metrics_address=127.0.0.1",
             f"--metrics_port={metrics_port}", f"--data_dir={work}/clickd-data",
             "--snapshot_interval=1s", f"--config={models}"] + replication_args,
            stdout=out, stderr=subprocess.STDOUT))

        def grpc_port():
            out.seek(0)
            m = re.search(r"\(port (\d+)\)", out.read())
            return m and m.group(1)

        server = "--server=127.0.0.1:" + wait_for(grpc_port, "clickd to start")
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            json.dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                       "rule_files": [RULES],
                       "scrape_configs": [{"job_name": "clickd", "static_configs": [
                           {"targets": [f"127.0.0.1:{metrics_port}"]}]}]}, f)
        procs.append(subprocess.Popen(
            [prometheus_bin, f"--config.file={config}", f"--storage.tsdb.path={work}/data",
             f"--web.listen-address=127.0.0.1:{prom_port}"],
            stdout=open(os.path.join(work, "prometheus.log"), "w"), stderr=subprocess.STDOUT))
        prom = Prometheus(prom_port)

        def traffic(i):
            subprocess.run([clickctl, "update", server, f"--context=user|u={i % 5}",
                            f"--example=ad|#{i % 3}", f"--label={i % 2}"],
                           check=True, capture_output=True, timeout=30)
            subprocess.run([clickctl, "predict", server, f"--context=user|u={i}",
                            "--candidates=ad|#1; ad|#2"], check=True, capture_output=True, timeout=30)

        # Traffic until rate() over the scrapes sees it, then a NOT_FOUND.
        i = 0

        def traffic_visible():
            nonlocal i
            i += 1
            traffic(i)
            r = prom.query('sum(rate(clickd_requests_total{job="clickd", code="OK"}[1m])) > 0')
            return r.get("status") == "success" and r["data"]["result"]

        wait_for(traffic_visible, "Prometheus to scrape clickd's traffic")
        subprocess.run([clickctl, "predict", server, "--model=missing", "--context=user|u=1",
                        "--candidates=ad|#1"], capture_output=True, timeout=30)
        for j in range(8):  # a few more scrapes, so that every rate has two samples
            traffic(i + j)
            time.sleep(0.25)

        up = prom.query('up{job="clickd"}')
        if not (up.get("status") == "success" and up["data"]["result"]
                and up["data"]["result"][0]["value"][1] == "1"):
            errors.append(f"the scrape of clickd is not up: {up}")
        rules = wait_for(lambda: (lambda r: r.get("status") == "success" and r["data"]["groups"] and r)(
            prom.get("rules")), "the rules to load")
        count = 0
        for group in rules["data"]["groups"]:
            for rule in group["rules"]:
                count += 1
                if rule.get("health") != "ok":
                    errors.append(f"rule {rule['name']}: health {rule.get('health')}: {rule.get('lastError')}")
        print(f"check_live: {count} alert rules evaluate on the real scrape")
        for name, expr in dashboard_queries():
            r = prom.query(expr)
            if r.get("status") != "success":
                errors.append(f"panel {name}: {r.get('error')} ({expr})")
                continue
            series = len(r["data"]["result"])
            print(f"check_live: {series:3d} series  {name}")
            why = may_be_empty(expr, bool(replication_args))
            if series == 0 and why:
                print(f"check_live:              (may be empty: {why})")
            elif series == 0:
                errors.append(f"panel {name}: no data from the real exporter ({expr})")
    except (TimeoutError, subprocess.SubprocessError) as e:
        errors.append(str(e))
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if errors:
            for log in ("clickd.out", "prometheus.log", "nats.log"):
                path = os.path.join(work, log)
                if os.path.exists(path):
                    print(f"--- {log} (last lines)")
                    print("".join(open(path).readlines()[-15:]))
        shutil.rmtree(work, ignore_errors=True)
    for e in errors:
        print(f"check_live: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
