#!/usr/bin/python3
"""Checks the Grafana dashboard deploy/grafana/clickd.json.

  check_dashboard.py [DASHBOARD.json]

Fails (exit 1, one line per problem) unless:
  - the file is JSON with schemaVersion >= 37, a uid and a title;
  - the template variables exist: `datasource` (type datasource, Prometheus),
    `model` from label_values(clickd_model_logloss, model), `instance`;
    every $variable a query uses is one of them or a Grafana built-in;
  - every panel has a unique id and a gridPos inside the 24-column grid, no two
    panels overlap, and every panel and target uses the `${datasource}` variable;
  - every target's PromQL names only clickd's metrics (promql_names.py), parses
    (promtool check rules, with the variables replaced, when promtool is
    installed), and together the panels show every metric of the catalog;
  - logloss, AUC and calibration are shown for both windows (no panel pins
    them to one window);
and that deliberately broken copies of it (BREAKAGES below) fail these checks.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import promql_names  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILTIN_VARS = {"__rate_interval", "__interval", "__range", "__range_s", "__interval_ms",
                "__name", "__all_instances"}
# What a Grafana variable stands for when the query is checked by promtool.
PROMTOOL_SUBSTITUTES = {"__rate_interval": "1m", "__interval": "15s", "__range": "1h",
                        "__range_s": "3600"}


def all_panels(panels):
    """Yields every panel, including those nested in collapsed rows."""
    for panel in panels:
        yield panel
        yield from all_panels(panel.get("panels", []))


def check_variables(dash, errors):
    variables = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
    ds = variables.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        errors.append("templating: no variable `datasource` of type datasource for prometheus")
    for name, metric in (("model", "clickd_model_logloss"), ("instance", "clickd_build_info")):
        var = variables.get(name)
        if not var or var.get("type") != "query":
            errors.append(f"templating: no query variable `{name}`")
            continue
        query = var.get("query")
        query = query.get("query", "") if isinstance(query, dict) else query
        want = f"label_values({metric}, {name})"
        if query != want:
            errors.append(f"templating: `{name}` queries {query!r}, expected {want!r}")
        if var.get("datasource", {}).get("uid") != "${datasource}":
            errors.append(f"templating: `{name}` does not use the ${{datasource}} variable")
    return set(variables)


def check_layout(panels, errors):
    ids, cells = set(), {}
    for panel in panels:
        title = panel.get("title", "?")
        if panel.get("id") in ids:
            errors.append(f"panel {title!r}: duplicate id {panel.get('id')}")
        ids.add(panel.get("id"))
        pos = panel.get("gridPos")
        if not pos or any(k not in pos for k in "xywh"):
            errors.append(f"panel {title!r}: no gridPos")
            continue
        if pos["x"] < 0 or pos["w"] <= 0 or pos["x"] + pos["w"] > 24:
            errors.append(f"panel {title!r}: gridPos {pos} leaves the 24-column grid")
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                if (x, y) in cells:
                    errors.append(f"panel {title!r} overlaps panel {cells[(x, y)]!r}")
                    break
                cells[(x, y)] = title
            else:
                continue
            break


def expressions(panels, errors):
    """Returns [(panel title, expr)] and checks each panel's data source."""
    exprs = []
    for panel in panels:
        if panel.get("type") == "row":
            continue
        title = panel.get("title", "?")
        if panel.get("datasource", {}).get("uid") != "${datasource}":
            errors.append(f"panel {title!r}: datasource is not ${{datasource}}")
        targets = panel.get("targets", [])
        if not targets:
            errors.append(f"panel {title!r}: no queries")
        for target in targets:
            if target.get("datasource", {}).get("uid") != "${datasource}":
                errors.append(f"panel {title!r} {target.get('refId')}: datasource is not ${{datasource}}")
            if not target.get("expr"):
                errors.append(f"panel {title!r} {target.get('refId')}: empty expr")
            else:
                exprs.append((title, target["expr"]))
    return exprs


def check_expressions(exprs, variables, errors):
    shown = set()
    for title, expr in exprs:
        for var in re.findall(r"\$\{?(\w+)", expr):
            if var not in variables and var not in BUILTIN_VARS:
                errors.append(f"panel {title!r}: unknown variable ${var} in {expr}")
        for name in promql_names.unknown_names(expr):
            errors.append(f"panel {title!r}: {name} is not a clickd metric ({expr})")
        metrics, _ = promql_names.names_in(expr)
        shown |= {promql_names.base_metric(m) for m in metrics}
    catalog = promql_names.COUNTERS | promql_names.GAUGES | promql_names.HISTOGRAMS
    for missing in sorted(catalog - shown):
        errors.append(f"no panel shows {missing}")
    for metric in ("clickd_model_logloss", "clickd_model_auc", "clickd_model_calibration"):
        if not any(metric in e and 'window="' not in e for _, e in exprs):
            errors.append(f"no panel shows {metric} for both windows")


def promtool_parse(exprs, errors):
    """Parses every expression with promtool, as recording rules."""
    promtool = shutil.which("promtool")
    if not promtool:
        print("check_dashboard: promtool not installed; PromQL syntax not checked")
        return
    rules = []
    for i, (title, expr) in enumerate(exprs):
        text = expr
        for var, value in PROMTOOL_SUBSTITUTES.items():
            text = text.replace("$" + var, value)
        text = re.sub(r"\$\{?\w+\}?", ".*", text)
        rules.append({"record": f"dashboard:expr_{i}", "expr": text})
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)  # JSON is YAML
        path = f.name
    try:
        result = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True)
    finally:
        os.unlink(path)
    if result.returncode != 0:
        errors.append("promtool cannot parse a dashboard query:\n" + result.stdout + result.stderr)


def check(dash):
    """Returns the problems with a parsed dashboard, [] when there are none."""
    errors = []
    if not isinstance(dash.get("schemaVersion"), int) or dash["schemaVersion"] < 37:
        errors.append(f"schemaVersion {dash.get('schemaVersion')} < 37")
    for key in ("uid", "title"):
        if not dash.get(key):
            errors.append(f"no {key}")
    variables = check_variables(dash, errors)
    panels = list(all_panels(dash.get("panels", [])))
    check_layout(panels, errors)
    exprs = expressions(panels, errors)
    check_expressions(exprs, variables, errors)
    promtool_parse(exprs, errors)
    return errors


def first_target(dash):
    return next(p for p in all_panels(dash["panels"]) if p.get("targets"))["targets"][0]


# Deliberately broken copies of the dashboard, each of which check() must reject,
# so that a check that silently passes everything is caught.
BREAKAGES = {
    "unknown metric": lambda d: first_target(d).update(expr="rate(clickd_request_total[5m])"),
    "PromQL syntax": lambda d: first_target(d).update(
        expr="sum by (method) (rate(clickd_requests_total[5m])"),
    "unknown variable": lambda d: first_target(d).update(expr='clickd_model_auc{model=~"$modle"}'),
    "no model variable": lambda d: d["templating"].update(
        list=[v for v in d["templating"]["list"] if v["name"] != "model"]),
    "overlapping panels": lambda d: d["panels"][-1]["gridPos"].update(y=0),
}


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "deploy/grafana/clickd.json")
    try:
        with open(path) as f:
            text = f.read()
        dash = json.loads(text)
    except (OSError, ValueError) as e:
        print(f"check_dashboard: {path}: {e}")
        return 1
    errors = check(dash)
    for e in errors:
        print(f"check_dashboard: {path}: {e}")
    for name, breakage in BREAKAGES.items():
        broken = json.loads(text)
        breakage(broken)
        if not check(broken):
            errors.append(name)
            print(f"check_dashboard: a dashboard with a broken {name} passes the checks")
    if not errors:
        panels = list(all_panels(dash.get("panels", [])))
        print(f"check_dashboard: {path}: {len(panels)} panels OK; "
              f"{len(BREAKAGES)} broken copies rejected")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
