#!/usr/bin/python3
"""Runs the dashboard's queries and the alert rules against a real scrape of clickd.

  check_live.py CLICKD CLICKCTL

Starts the built clickd (gRPC and /metrics on free loopback ports, a data
directory with snapshots every second, so that the durability series exist), a real
Prometheus (the Debian package) scraping it every second with
deploy/prometheus/rules/clickd_alerts.yml loaded, and sends a few Updates and
Predicts (one of them to a missing model) with clickctl. Then fails unless:
  - Prometheus's scrape of clickd is up and every alert rule evaluates
    without error (health "ok");
  - every query of deploy/grafana/clickd.json, with the Grafana variables set
    to "all", runs without error and returns series.
So the dashboard and rules agree with the exporter's real names and labels,
which the static checks (check_dashboard.py, check_alerts.py) cannot see.
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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DASHBOARD = os.path.join(ROOT, "deploy/grafana/clickd.json")
RULES = os.path.join(ROOT, "deploy/prometheus/rules/clickd_alerts.yml")
DEADLINE_SECONDS = 60


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
        out = open(os.path.join(work, "clickd.out"), "w+")
        procs.append(subprocess.Popen(
            [clickd, "--address=127.0.0.1:0", "--metrics_address=127.0.0.1",
             f"--metrics_port={metrics_port}", f"--data_dir={work}/clickd-data",
             "--snapshot_interval=1s"], stdout=out, stderr=subprocess.STDOUT))

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
            if series == 0:
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
            for log in ("clickd.out", "prometheus.log"):
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
