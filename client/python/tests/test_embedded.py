"""clickd.EmbeddedReplica against a real deployment: one nats-server with
JetStream and one clickd replica (--replication=jetstream), both started on
loopback by this module and stopped by PID.

The embedded replica answers Predict in this process with the same bytes
as the replica's gRPC Predict at the same model_version, reports the same
state digest, refuses what only a server does with the same exception
classes, and writes nothing to the log.
"""

import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

import clickd
from server import Server

LIBRARY = os.environ.get("CLICKD_EMBEDDED_LIB", "")
NATS_SERVER = os.environ.get("CLICKD_NATS_SERVER", "/usr/local/bin/nats-server")

pytestmark = pytest.mark.skipif(
    not LIBRARY, reason="CLICKD_EMBEDDED_LIB is unset: sanitizer builds make no shared library")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    """(nats_url, clickd Server) of a one-node replicated deployment."""
    if not os.access(NATS_SERVER, os.X_OK):
        pytest.fail(f"{NATS_SERVER} is missing (bash scripts/install_nats.sh)")
    store = tmp_path_factory.mktemp("nats")
    port = free_port()
    nats = subprocess.Popen([NATS_SERVER, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd",
                             str(store)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"nats://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.05)
    data = tmp_path_factory.mktemp("replica")
    replica = Server([f"--data_dir={data}", "--replication=jetstream", f"--nats_url={url}",
                      "--nats_replicas=1", "--replica_id=py0", "--snapshot_interval=1h",
                      "--nats_min_server_version="]).start(ready_timeout=60)
    yield url, replica
    replica.stop()
    replica.close()
    os.kill(nats.pid, signal.SIGTERM)
    nats.wait(timeout=20)
    shutil.rmtree(store, ignore_errors=True)


@pytest.fixture
def trained(deployment):
    """Teaches the default model 20 Updates; (nats_url, client, last model_version)."""
    url, replica = deployment
    with clickd.Client(replica.address, timeout=10) as client:
        version = 0
        for i in range(20):
            examples = [({"user": [f"u{(i * 7 + k) % 50}"], "ad": [f"a{(i + k) % 20}"]},
                         1.0 if (i + k) % 4 == 0 else 0.0) for k in range(10)]
            response = client.update("default", examples, idempotency_key=f"py-embedded-{i}")
            version = max(version, response.model_version)
        yield url, client, version


def candidates():
    return [{"ad": [f"a{a}"]} for a in range(5)]


def test_predict_and_digest_equal_the_servers(trained):
    url, client, version = trained
    with clickd.EmbeddedReplica(url, library=LIBRARY, catch_up_timeout=30) as replica:
        replica.wait_for_version(version, timeout=30)
        assert replica.applied_version() >= version
        mine = replica.predict("default", candidates(), context={"user": ["u7"]},
                               min_model_version=version)
        theirs = client.predict("default", candidates(), context={"user": ["u7"]},
                                min_model_version=version)
        assert mine.model_version == theirs.model_version
        assert [p.margin for p in mine.predictions] == [p.margin for p in theirs.predictions]
        assert [p.prediction for p in mine.predictions] == \
            [p.prediction for p in theirs.predictions]
        assert replica.state_digest("default") == client.state_digest("default")
        request = clickd.predict_request("default", candidates(), {"user": ["u7"]})
        assert replica.predict(request) == mine
        assert replica.predict(request.SerializeToString()) == mine
        stats = replica.stats()
        assert stats["bootstraps"] == 1 and stats["models"] >= 1 and stats["nats_connected"]


def test_refusals_raise_the_clients_exception_classes(trained):
    url, client, version = trained
    with clickd.EmbeddedReplica(url, library=LIBRARY) as replica:
        replica.wait_for_version(version, timeout=30)
        with pytest.raises(clickd.FailedPreconditionError, match="log_impressions"):
            replica.predict("default", candidates(), log_impressions=True)
        with pytest.raises(clickd.InvalidArgumentError, match="candidates"):
            replica.predict("default", [])
        with pytest.raises(clickd.NotFoundError):
            replica.predict("no-such-model", candidates())
        with pytest.raises(clickd.NotFoundError):
            replica.state_digest("no-such-model")
        with pytest.raises(clickd.DeadlineExceededError):
            replica.wait_for_version(replica.applied_version() + 1000, timeout=0.2)
        applied = replica.applied_version()
    # Nothing it did reached the log.
    time.sleep(0.5)
    assert client.predict("default", candidates()).model_version == applied
    with pytest.raises(ValueError):
        replica.applied_version()


def test_predict_keys_answers_as_predict_does(trained):
    """The protobuf-free call: the same answer, bit for bit, as predict()."""
    url, client, version = trained
    from clickd import hashing
    user, ad = hashing.namespace_hash("user"), hashing.namespace_hash("ad")
    with clickd.EmbeddedReplica(url, library=LIBRARY) as replica:
        replica.wait_for_version(version, timeout=30)
        expected = replica.predict("default", candidates(), context={"user": ["u7"]})
        request = clickd.KeysRequest(
            "default", ["user", "ad"],
            [{"ad": [hashing.named_key(ad, f"a{a}")]} for a in range(5)],
            context={"user": [hashing.named_key(user, "u7")]})
        got = replica.predict_keys(request)
        assert list(got) == [p.prediction for p in expected.predictions]
        assert list(request.margins) == [p.margin for p in expected.predictions]
        assert request.model_version == expected.model_version
        # Values, and keys swapped in place: still what predict() says.
        request.set_candidate_keys([hashing.named_key(ad, f"a{a}") for a in (4, 3, 2, 1, 0)])
        assert list(replica.predict_keys(request)) == \
            [p.prediction for p in reversed(expected.predictions)]
        # The arrays are pinned: resizing one would move it under the library.
        with pytest.raises(BufferError):
            request.candidate_keys.append(1)
        halves = clickd.KeysRequest(
            "default", ["ad"], [{"ad": ([hashing.named_key(ad, "a1")], [0.5])}])
        theirs = client.predict("default", [{"ad": [("a1", 0.5)]}])
        assert list(replica.predict_keys(halves)) == [theirs.predictions[0].prediction]
        with pytest.raises(ValueError, match="not in namespaces"):
            clickd.KeysRequest("default", ["ad"], [{"site": [1]}])
        with pytest.raises(clickd.InvalidArgumentError, match="candidates"):
            replica.predict_keys(clickd.KeysRequest("default", ["ad"], []))
        with pytest.raises(clickd.NotFoundError):
            replica.predict_keys(clickd.KeysRequest("nope", ["ad"], [{"ad": [1]}]))


def test_close_while_threads_call(trained):
    """Each call answers or says closed; nothing else, no crash."""
    import threading
    url, _, version = trained
    from clickd import hashing
    ad = hashing.namespace_hash("ad")
    replica = clickd.EmbeddedReplica(url, library=LIBRARY)
    replica.wait_for_version(version, timeout=30)
    answered, unexpected = [0], []

    def call():
        request = clickd.KeysRequest("default", ["ad"], [{"ad": [hashing.named_key(ad, "a1")]}])
        stop_at = time.monotonic() + 20
        while time.monotonic() < stop_at:
            try:
                replica.predict_keys(request)
                answered[0] += 1
            except (ValueError, clickd.FailedPreconditionError):
                return
            except Exception as e:  # noqa: BLE001 - any other outcome fails the test
                unexpected.append(e)
                return
        unexpected.append("still answering 20 s after close")

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    # Bounded: the wait stops at the first unexpected outcome, or at 20 s.
    close_by = time.monotonic() + 20
    while answered[0] < 1000 and not unexpected and time.monotonic() < close_by:
        time.sleep(0.001)
    replica.close()
    for t in threads:
        t.join(30)
    assert not unexpected
    with pytest.raises(ValueError):
        replica.predict("default", candidates())


def test_a_missing_log_is_not_found_and_not_created(deployment):
    url, _ = deployment
    with pytest.raises(clickd.NotFoundError, match="NOSUCH_LOG"):
        clickd.EmbeddedReplica(url, "NOSUCH", library=LIBRARY, catch_up_timeout=5)


def test_client_predict_arguments_switch_in_one_line(trained):
    """The same call, Client.predict's keywords included, works on both."""
    url, client, version = trained
    with clickd.EmbeddedReplica(url, library=LIBRARY) as replica:
        replica.wait_for_version(version, timeout=30)
        kwargs = dict(context={"user": ["u3"]}, min_model_version=version, request_id="r1",
                      uncertainty=True, explain_top_k=2, timeout=5.0, wait_for_ready=True)
        mine = replica.predict("default", candidates(), **kwargs)
        theirs = client.predict("default", candidates(), **kwargs)
        assert mine == theirs
        # timeout, not the library's own 1 s bound, sets how long a version
        # the log has not reached is waited for (a wait is never shorter).
        started = time.monotonic()
        with pytest.raises(clickd.DeadlineExceededError):
            replica.predict("default", candidates(),
                            min_model_version=replica.applied_version() + 1000, timeout=2.5)
        assert time.monotonic() - started >= 2.4


def metric_values(text: str) -> dict:
    """{'name{labels}': value} of every sample line of a text exposition."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            out[series] = float(value)
    return out


def test_metrics_text_says_what_it_applied_and_served(trained):
    """metrics_text() for the host's /metrics: values as applied and served,
    and a text that promtool (Prometheus' own checker) accepts."""
    url, client, version = trained
    with clickd.EmbeddedReplica(url, library=LIBRARY) as replica:
        replica.wait_for_version(version, timeout=30)
        for _ in range(2):
            replica.predict("default", candidates())
        with pytest.raises(clickd.NotFoundError):
            replica.predict("no-such-model", candidates())
        applied = replica.applied_version()
        text = replica.metrics_text()
    values = metric_values(text)
    s = 'stream="CLICKD"'
    assert values[f"clickd_embedded_applied_sequence{{{s}}}"] == applied
    assert values[f'clickd_embedded_model_version{{model="default",{s}}}'] <= applied
    assert values[f'clickd_embedded_model_version{{model="default",{s}}}'] >= version
    assert values[f'clickd_embedded_predictions_total{{model="default",{s}}}'] == 10
    assert values[f'clickd_embedded_predict_calls_total{{code="OK",{s}}}'] == 2
    assert values[f'clickd_embedded_predict_calls_total{{code="NOT_FOUND",{s}}}'] == 1
    assert values[f"clickd_embedded_bootstraps_total{{{s}}}"] == 1
    assert values[f"clickd_embedded_nats_connected{{{s}}}"] == 1
    assert values[f'clickd_embedded_model_bytes{{model="default",{s}}}'] > 0
    promtool = shutil.which("promtool")
    if promtool:
        checked = subprocess.run([promtool, "check", "metrics"], input=text.encode(),
                                 capture_output=True, timeout=30)
        assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()


def test_a_real_prometheus_scrapes_metrics_text_from_the_host(trained, tmp_path):
    """A host serving metrics_text() on its own /metrics, scraped by the real
    Prometheus every second: Prometheus stores the replica's applied sequence."""
    import http.server
    import json
    import threading
    import urllib.parse
    import urllib.request

    prometheus_binary = shutil.which("prometheus") or "/usr/bin/prometheus"
    if not os.access(prometheus_binary, os.X_OK):
        pytest.skip("no prometheus binary on this machine")
    url, _, version = trained
    with clickd.EmbeddedReplica(url, library=LIBRARY) as replica:
        replica.wait_for_version(version, timeout=30)
        applied = replica.applied_version()

        class Metrics(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = replica.metrics_text().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        host = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
        serving = threading.Thread(target=host.serve_forever, daemon=True)
        serving.start()
        config = tmp_path / "prometheus.yml"
        config.write_text(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: host
    static_configs:
      - targets: ["127.0.0.1:{host.server_address[1]}"]
""")
        prom_port = free_port()
        prometheus = subprocess.Popen(
            [prometheus_binary, f"--config.file={config}",
             f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            query = "clickd_embedded_applied_sequence{job=\"host\",stream=\"CLICKD\"}"
            stored = None
            deadline = time.monotonic() + 60
            while stored != applied and time.monotonic() < deadline:
                assert prometheus.poll() is None, "prometheus exited"
                time.sleep(0.5)
                try:
                    with urllib.request.urlopen(
                            f"http://127.0.0.1:{prom_port}/api/v1/query?"
                            + urllib.parse.urlencode({"query": query}), timeout=5) as answer:
                        result = json.load(answer)["data"]["result"]
                except OSError:
                    continue  # not listening yet
                if result:
                    stored = float(result[0]["value"][1])
            assert stored == applied, (stored, applied)
        finally:
            os.kill(prometheus.pid, signal.SIGTERM)
            prometheus.wait(timeout=30)
            host.shutdown()
            host.server_close()
