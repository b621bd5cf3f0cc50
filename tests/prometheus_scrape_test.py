#!/usr/bin/python3
"""A real Prometheus server scrapes a real clickd while it learns.

Starts clickd (with its /metrics endpoint) and /usr/bin/prometheus on free
ports of 127.0.0.1, Prometheus scraping clickd every second into a
temporary TSDB. Streams examples into a new model with `clickctl replay
--server` in two phases: a few examples, then (over a few seconds, in
chunks) many more of the same learnable pattern. Then asks Prometheus'
HTTP API for the live progressive logloss and checks that

  * the series exists with the model's label, for both windows;
  * the value Prometheus scraped after the first phase is the one clickd
    computes for those examples, and the value after the second phase is
    lower (the model learned the pattern, so each later example costs less);
  * the scraped series never goes up in between (a running mean of
    per-example losses that keep falling).

Every value compared is determined by the examples alone (one stream, one
learner: learning is deterministic), so no assertion depends on timing;
every wait is bounded. Both processes are stopped by PID.

  prometheus_scrape_test.py --clickd=PATH --clickctl=PATH [--prometheus=PATH]
"""

import argparse
import ctypes
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

MODEL = "live"
PHASE1 = 20          # examples before the first checked scrape
PHASE2_CHUNKS = 5    # then this many replays...
PHASE2_CHUNK = 400   # ...of this many examples each, a second apart
SCRAPE_INTERVAL_S = 1
WAIT_S = 60          # bound of every wait for a process or a scrape


def log(*args):
    print("prometheus_scrape_test:", *args, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent():
    # The child gets SIGKILL if this script dies (say, ctest's timeout).
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def start(argv, log_path):
    out = open(log_path, "wb")
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                            preexec_fn=die_with_parent)


def stop(proc, name, grace_s=30):
    """SIGTERM, wait up to grace_s, then SIGKILL. Returns the exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            log(f"{name} (pid {proc.pid}) ignored SIGTERM for {grace_s} s; killing it")
            proc.kill()
            proc.wait(timeout=grace_s)
    return proc.returncode


def wait_for(what, predicate, timeout_s=WAIT_S, interval_s=0.2):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except (OSError, ValueError) as e:  # not up yet
            last = e
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what} (last: {last!r})")


def http_get(url, timeout_s=10):
    with urllib.request.urlopen(url, timeout=timeout_s) as r:
        return r.read().decode()


class Prometheus:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def query(self, promql):
        """The instant vector of `promql` now: [(labels, value)]."""
        url = f"{self.base}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        reply = json.loads(http_get(url))
        assert reply["status"] == "success", reply
        return [(r["metric"], float(r["value"][1])) for r in reply["data"]["result"]]

    def samples(self, selector, seconds):
        """Every sample scraped in the last `seconds` of each series of
        `selector`, oldest first: [(labels, [value])]."""
        url = f"{self.base}/api/v1/query?" + urllib.parse.urlencode(
            {"query": f"{selector}[{seconds}s]"})
        reply = json.loads(http_get(url))
        assert reply["status"] == "success", reply
        assert reply["data"]["resultType"] == "matrix", reply
        return [(r["metric"], [float(v) for _, v in r["values"]])
                for r in reply["data"]["result"]]

    def value(self, promql):
        """The single value of `promql`, or None while there is none."""
        result = self.query(promql)
        assert len(result) <= 1, result
        return result[0][1] if result else None


def write_examples(path, count, offset=0):
    """A learnable stream: feature 1 always clicks, feature 2 never does."""
    with open(path, "w") as f:
        for i in range(offset, offset + count):
            f.write("1 1:1\n" if i % 2 == 0 else "0 2:1\n")


def replay(clickctl, server, path, create):
    argv = [clickctl, "replay", f"--server={server}", f"--model={MODEL}", "--format=libsvm",
            "--deadline_ms=30000", "--json"]
    if create:
        argv.append("--create_model")
    r = subprocess.run(argv + [path], capture_output=True, text=True, timeout=WAIT_S)
    assert r.returncode == 0, f"{' '.join(argv)} failed ({r.returncode}):\n{r.stdout}{r.stderr}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def run(args, work):
    grpc_port, metrics_port, prom_port = free_port(), free_port(), free_port()
    server = f"127.0.0.1:{grpc_port}"
    clickd_log = os.path.join(work, "clickd.log")
    prom_log = os.path.join(work, "prometheus.log")
    clickd = prometheus = None
    try:
        clickd = start([args.clickd, f"--address={server}", "--metrics_address=127.0.0.1",
                        f"--metrics_port={metrics_port}"], clickd_log)
        wait_for("clickd to serve",
                 lambda: clickd.poll() is None and "clickd: serving" in open(clickd_log).read())
        log(f"clickd pid {clickd.pid}: gRPC {server}, metrics 127.0.0.1:{metrics_port}")

        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write(f"""global:
  scrape_interval: {SCRAPE_INTERVAL_S}s
  scrape_timeout: {SCRAPE_INTERVAL_S}s
scrape_configs:
  - job_name: clickd
    static_configs:
      - targets: ["127.0.0.1:{metrics_port}"]
""")
        prometheus = start([args.prometheus, f"--config.file={config}",
                            f"--storage.tsdb.path={os.path.join(work, 'tsdb')}",
                            f"--web.listen-address=127.0.0.1:{prom_port}",
                            "--log.level=warn"], prom_log)
        prom = Prometheus(prom_port)
        wait_for("Prometheus to be ready",
                 lambda: prometheus.poll() is None and "Ready" in http_get(prom.base + "/-/ready"))
        log(f"prometheus pid {prometheus.pid} on 127.0.0.1:{prom_port}")
        wait_for("a successful scrape of clickd", lambda: prom.value('up{job="clickd"}') == 1)

        # Phase 1: a few examples into a new model.
        t0 = time.time()
        phase1 = os.path.join(work, "phase1.libsvm")
        write_examples(phase1, PHASE1)
        first = replay(args.clickctl, server, phase1, create=True)
        assert first["acknowledged"] == PHASE1, first
        since_start = f'{{model="{MODEL}",window="since_start"}}'
        wait_for(f"Prometheus to scrape the first {PHASE1} examples",
                 lambda: prom.value(f"clickd_model_progressive_examples{since_start}") == PHASE1)
        series = prom.query(f"clickd_model_logloss{since_start}")
        assert len(series) == 1, series
        labels, logloss1 = series[0]
        assert labels.get("model") == MODEL and labels.get("job") == "clickd", labels
        # The stream's own summary covers the same examples (its AUC is exact
        # but its logloss is the same mean).
        assert math.isclose(logloss1, first["logloss"], rel_tol=1e-9), (logloss1, first)
        log(f"after {PHASE1} examples Prometheus holds logloss {logloss1:.6f}")

        # Phase 2: stream more of the same pattern for a few seconds.
        for chunk in range(PHASE2_CHUNKS):
            path = os.path.join(work, f"phase2_{chunk}.libsvm")
            write_examples(path, PHASE2_CHUNK, offset=PHASE1 + chunk * PHASE2_CHUNK)
            replay(args.clickctl, server, path, create=False)
            time.sleep(SCRAPE_INTERVAL_S)
        total = PHASE1 + PHASE2_CHUNKS * PHASE2_CHUNK
        wait_for(f"Prometheus to scrape all {total} examples",
                 lambda: prom.value(f"clickd_model_progressive_examples{since_start}") == total)
        logloss2 = prom.value(f"clickd_model_logloss{since_start}")
        log(f"after {total} examples Prometheus holds logloss {logloss2:.6f}")
        assert logloss2 < logloss1, (logloss1, logloss2)

        # Every scrape since the model appeared: never up, from logloss1
        # down to logloss2.
        elapsed = math.ceil(time.time() - t0) + 1
        [(_, values)] = prom.samples(f"clickd_model_logloss{since_start}", elapsed)
        assert all(b <= a for a, b in zip(values, values[1:])), values
        assert values[0] == logloss1 and values[-1] == logloss2, values
        log(f"{len(values)} scrapes of the series, non-increasing: "
            f"{values[0]:.4f} .. {values[-1]:.4f}")

        # The 10-minute window holds every example too, so it agrees.
        recent = f'{{model="{MODEL}",window="10m"}}'
        assert prom.value(f"clickd_model_progressive_examples{recent}") == total
        assert math.isclose(prom.value(f"clickd_model_logloss{recent}"), logloss2, rel_tol=1e-9)
        assert prom.value(f'clickd_update_examples_total{{model="{MODEL}"}}') == total
        assert prom.value(f'clickd_requests_total{{method="UpdateStreamAcked",code="OK"}}') == \
            1 + PHASE2_CHUNKS
    except BaseException:
        for name, path in (("clickd", clickd_log), ("prometheus", prom_log)):
            if os.path.exists(path):
                sys.stderr.write(f"--- {name} output:\n{open(path, errors='replace').read()}\n")
        raise
    finally:
        codes = {}
        if prometheus is not None:
            codes["prometheus"] = stop(prometheus, "prometheus")
        if clickd is not None:
            codes["clickd"] = stop(clickd, "clickd")
    assert codes.get("clickd") == 0, f"clickd exited with {codes.get('clickd')}"
    log("PASS")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clickd", required=True)
    parser.add_argument("--clickctl", required=True)
    parser.add_argument("--prometheus", default="/usr/bin/prometheus")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="clickd_prometheus_") as work:
        run(args, work)


if __name__ == "__main__":
    main()
