#!/usr/bin/python3
"""Issue 33's attacks against clickd, before and after the fixes, in one run.

  CLICKD_AFTER=build/release/server/clickd CLICKD_BEFORE=/path/to/old/clickd \\
      /usr/bin/python3 bench/untrusted/attacks.py [--out DIR] [--only N1,N5]

(bench/untrusted/README.md.) For each attack and each binary (CLICKD_BEFORE
first when it is set, then CLICKD_AFTER) it starts that clickd on a free
port of 127.0.0.1, starts a neighbour (Predicts of 20 candidates on the
model "default", on a connection of its own, one every 10 ms), measures
2 s of the neighbour alone, applies the attack (bounded in count and time)
and records: the server's RSS before the attack and its peak during it
(/proc/PID/status VmRSS sampled every 20 ms; VmHWM at the end), the
neighbour's p50/p99 before and during, its failed calls, and the attack's
outcome. Each attack gets a fresh server, stopped by PID. Results go to
DIR/results.json (default bench/out/untrusted, gitignored) and a markdown
table to stdout and DIR/table.md.
"""
import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from raw_http2 import RawHttp2Connection  # noqa: E402

import grpc  # noqa: E402


def stubs(out):
    """Generates the clickd.v1 Python stubs into OUT/stubs (Debian's protoc)."""
    target = os.path.join(out, "stubs")
    if not os.path.exists(os.path.join(target, "clickd", "v1", "clickd_pb2_grpc.py")):
        os.makedirs(target, exist_ok=True)
        subprocess.run(["protoc", "-I", os.path.join(ROOT, "proto"), f"--python_out={target}",
                        f"--grpc_out={target}", "--plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin",
                        os.path.join(ROOT, "proto", "clickd", "v1", "clickd.proto")], check=True)
    sys.path.insert(0, target)


ADMIN_TOKEN = "neighbour-admin-token-0123456789"
AUTH = [("authorization", "Bearer " + ADMIN_TOKEN)]
PREDICT_TOKEN = "attacker-predict-token-0123456789"
# Attacks run with --auth_tokens_file (an admin token for the neighbour and
# the setup, a predict-role token for N4a's attacker); the others without.
WITH_TOKENS = {"N2", "N4a"}
_, HARD_NOFILE = resource.getrlimit(resource.RLIMIT_NOFILE)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_kib(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def percentile(values, q):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


class Server:
    """One clickd on a free port of 127.0.0.1, stopped by its PID."""

    def __init__(self, binary, flags, soft_nofile=None):
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.log = tempfile.NamedTemporaryFile(prefix="untrusted_clickd_", suffix=".log")
        limit = None if soft_nofile is None else (min(soft_nofile, HARD_NOFILE), HARD_NOFILE)
        self.proc = subprocess.Popen(
            [binary, f"--address={self.address}", *flags], stdin=subprocess.DEVNULL,
            stdout=self.log, stderr=subprocess.STDOUT,
            preexec_fn=(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, limit)) if limit else None)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if b"clickd: serving" in self.output():
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"{binary} exited {self.proc.returncode}: {self.output()[-400:]}")
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{binary} did not start within 30 s")

    def output(self):
        with open(self.log.name, "rb") as f:
            return f.read()

    def channel(self, **options):
        opts = [("grpc.max_receive_message_length", options.get("receive", 4 << 20)),
                ("grpc.max_send_message_length", 64 << 20)]
        return grpc.insecure_channel(self.address, options=opts)

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=20)
        return self.proc.returncode


class Sampler(threading.Thread):
    """The server's VmRSS every 20 ms; peak() since the last mark()."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.stop_event, self.lock = pid, threading.Event(), threading.Lock()
        self.current = self.peak_kib = status_kib(pid, "VmRSS")

    def run(self):
        while not self.stop_event.wait(0.02):
            rss = status_kib(self.pid, "VmRSS")
            with self.lock:
                self.current = rss or self.current
                self.peak_kib = max(self.peak_kib, rss)

    def mark(self):
        with self.lock:
            self.peak_kib = self.current
            return self.current

    def peak(self):
        with self.lock:
            return self.peak_kib


class Neighbour(threading.Thread):
    """Predicts on "default", one every 10 ms, deadline 5 s, for at most 120 s."""

    def __init__(self, server, pb, pb_grpc):
        super().__init__(daemon=True)
        self.channel = server.channel()
        self.stub = pb_grpc.ClickdStub(self.channel)
        self.request = pb.PredictRequest(model="default")
        for c in range(20):
            ns = self.request.candidates.add().namespaces.add(name="ad")
            for f in range(10):
                ns.features.add(id=c * 100 + f)
        self.calls, self.lock, self.stop_event = [], threading.Lock(), threading.Event()

    def run(self):
        end = time.monotonic() + 120
        while not self.stop_event.is_set() and time.monotonic() < end:
            start = time.monotonic()
            try:
                self.stub.Predict(self.request, timeout=5, metadata=AUTH)
                ok = True
            except grpc.RpcError:
                ok = False
            with self.lock:
                self.calls.append((start, time.monotonic() - start, ok))
            self.stop_event.wait(0.01)

    def window(self, begin, end):
        with self.lock:
            calls = [c for c in self.calls if begin <= c[0] < end]
        latencies = [c[1] * 1000 for c in calls]
        return {"calls": len(calls), "failed": sum(1 for c in calls if not c[2]),
                "p50_ms": percentile(latencies, 0.5), "p99_ms": percentile(latencies, 0.99)}

    def finish(self):
        self.stop_event.set()
        if self.is_alive():
            self.join(timeout=10)
        self.channel.close()


def code(e):
    return e.code().name if isinstance(e, grpc.RpcError) else type(e).__name__


# ----------------------------------------------------------------------------
# The attacks. Each is (name, description, server flags before, flags after,
# setup(ctx) or None, attack(ctx) -> outcome string). ctx: server, stub, pb.
# ----------------------------------------------------------------------------


def health(ctx, timeout):
    start = time.monotonic()
    try:
        with grpc.insecure_channel(ctx.server.address) as channel:
            check = channel.unary_unary("/grpc.health.v1.Health/Check")
            check(b"", timeout=timeout)
        return f"SERVING in {time.monotonic() - start:.2f} s"
    except grpc.RpcError as e:
        return f"{code(e)} after {time.monotonic() - start:.1f} s"


def n1_idle_connections(ctx):
    sockets = []
    for _ in range(1100):
        s = socket.socket()
        try:
            s.settimeout(1)
            s.connect(("127.0.0.1", ctx.server.port))
            sockets.append(s)
        except OSError:
            s.close()
    time.sleep(2)
    fds = len(os.listdir(f"/proc/{ctx.server.proc.pid}/fd"))
    during = health(ctx, 3)
    for s in sockets:
        s.close()
    time.sleep(2)
    after = health(ctx, 3)
    return (f"{len(sockets)} open, server {fds} descriptors; a new connection's health check "
            f"while open: {during}; after they closed: {after}")


def n2_partial_messages(ctx):
    connection = RawHttp2Connection(ctx.server.port)
    for _ in range(40):
        connection.start_call("/clickd.v1.Clickd/Update", [], 8 << 20)
    connection.pump(8)
    sent, ended = connection.sent(), connection.ended()
    connection.close()
    return f"{sent / 1e6:.0f} MB sent of 40 x 8 MiB; {ended} of 40 streams ended by the server"


def create(ctx, config):
    ctx.stub.CreateModel(ctx.pb.CreateModelRequest(config=config), timeout=30, metadata=AUTH)


def fill(ctx, model, coordinates, per_update=50000, offset=0):
    for start in range(offset, offset + coordinates, per_update):
        request = ctx.pb.UpdateRequest(model=model)
        le = request.examples.add(label=1)
        le.example.namespaces.add(name="f", ids=range(start, start + per_update))
        ctx.stub.Update(request, timeout=60, metadata=AUTH)


def n4_setup(ctx):
    create(ctx, ctx.pb.ModelConfig(name="victim"))
    fill(ctx, "victim", 4_000_000)


def n4_state_digest(ctx):
    caller = ctx.attacker_auth
    stop, lock = time.monotonic() + 5, threading.Lock()
    digests, update_ms, errors = [], [], []

    def digest_loop():
        while time.monotonic() < stop:
            start = time.monotonic()
            try:
                ctx.stub.GetModel(ctx.pb.GetModelRequest(model="victim", state_digest=True),
                                  timeout=30, metadata=caller)
                with lock:
                    digests.append(time.monotonic() - start)
            except grpc.RpcError as e:
                with lock:
                    errors.append(code(e))

    def update_loop():
        request = ctx.pb.UpdateRequest(model="victim")
        request.examples.add(label=1).example.namespaces.add(name="f", ids=[1])
        while time.monotonic() < stop:
            start = time.monotonic()
            try:
                ctx.stub.Update(request, timeout=30, metadata=AUTH)
            except grpc.RpcError as e:
                errors.append("Update " + code(e))
            update_ms.append((time.monotonic() - start) * 1000)
            time.sleep(0.05)

    threads = [threading.Thread(target=digest_loop) for _ in range(8)]
    threads.append(threading.Thread(target=update_loop))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=40)
    median = f" (median {percentile(digests, 0.5):.2f} s)" if digests else ""
    return (f"8 callers x 5 s on 4M coordinates: {len(digests)} digests{median}, errors {sorted(set(errors)) or 'none'}; "
            f"an Update on that model: max {max(update_ms, default=0):.0f} ms")


def n5_setup(ctx):
    create(ctx, ctx.pb.ModelConfig(name="victim"))


def n5_explanations(ctx):
    request = ctx.pb.PredictRequest(model="victim", explain_top_k=100)
    user = request.context.namespaces.add(name="user")
    for j in range(100):
        user.features.add(name=f"{j}" + "x" * 197)
    for i in range(1000):
        request.candidates.add().namespaces.add(name="ad").features.add(id=i)
    stop, outcomes, lock = time.monotonic() + 5, [], threading.Lock()

    def loop():
        while time.monotonic() < stop:
            try:
                reply = ctx.stub.Predict(request, timeout=30, metadata=AUTH)
                result = f"OK {reply.ByteSize() / 1e6:.0f} MB"
            except grpc.RpcError as e:
                result = code(e)
            with lock:
                outcomes.append(result)

    threads = [threading.Thread(target=loop) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    counts = {o: outcomes.count(o) for o in sorted(set(outcomes))}
    return (f"Predicts of {request.ByteSize() / 1e3:.0f} KB (1,000 candidates, explain_top_k 100), "
            f"4 callers x 5 s, client limit 4 MiB: " + ", ".join(f"{v} {k}" for k, v in counts.items()))


def n9_setup(ctx):
    config = ctx.pb.ModelConfig(name="victim")
    for i in range(8):
        config.variants.add(name=f"v{i}")
    create(ctx, config)


def n9_variants(ctx):
    outcomes = []
    for u in range(5):
        request = ctx.pb.UpdateRequest(model="victim")
        for e in range(20):
            base = (u * 20 + e) * 10000
            request.examples.add(label=e % 2).example.namespaces.add(
                name="f", ids=range(base, base + 10000))
        try:
            ctx.stub.Update(request, timeout=60, metadata=AUTH)
            outcomes.append("OK")
        except grpc.RpcError as e:
            outcomes.append(code(e))
    counts = {o: outcomes.count(o) for o in sorted(set(outcomes))}
    return ("5 Updates of 200,000 new features (2 MB) to a model with 8 variants, "
            "--max_features_per_request=400000: " + ", ".join(f"{v} {k}" for k, v in counts.items()))


def n10_idle_streams(ctx):
    release = threading.Event()

    def nothing():
        release.wait(20)
        return
        yield

    futures = [ctx.stub.UpdateStream.future(nothing(), timeout=30, metadata=AUTH)
               for _ in range(256)]
    time.sleep(4)
    start = time.monotonic()
    try:
        ctx.stub.UpdateStream(iter(()), timeout=5, metadata=AUTH)
        fresh = "OK"
    except grpc.RpcError as e:
        fresh = code(e)
    fresh += f" in {time.monotonic() - start:.2f} s"
    ended = sum(1 for f in futures if f.done())
    release.set()
    for f in futures:
        f.cancel()
    return f"256 streams sending nothing; after 4 s {ended} of them ended; a new stream: {fresh}"


def metrics_request(port, data, read_timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=read_timeout)
    try:
        s.settimeout(5)
        sent = 0
        try:
            for chunk in data:
                s.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass
        s.settimeout(read_timeout)
        try:
            reply = s.recv(64).split(b"\r\n")[0].decode(errors="replace")
        except OSError as e:
            reply = type(e).__name__
        return sent, reply or "closed"
    finally:
        s.close()


def n11_body(ctx):
    head = b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n"
    sent, reply = metrics_request(ctx.metrics_port, [head] + [b"x" * (1 << 20)] * 64)
    return f"POST announcing 1 GiB, 64 MiB sent: {sent / 1e6:.0f} MB written, reply \"{reply}\""


def n11_headers(ctx):
    line = b"X-A: " + b"a" * 4091 + b"\r\n"
    chunks = [b"GET /metrics HTTP/1.1\r\nHost: x\r\n"] + [line * 100] * 200 + [b"\r\n"]
    sent, reply = metrics_request(ctx.metrics_port, chunks)
    return f"20,000 header lines of 4 KB: {sent / 1e6:.0f} MB written, reply \"{reply}\""


def n11_slowloris(ctx):
    s = socket.create_connection(("127.0.0.1", ctx.metrics_port), timeout=5)
    start, outcome = time.monotonic(), None
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    s.settimeout(0.25)
    while time.monotonic() - start < 10 and outcome is None:
        try:
            s.send(b"a")
            reply = s.recv(64)
            outcome = (reply.split(b"\r\n")[0].decode(errors="replace") or "closed")
        except socket.timeout:
            continue
        except OSError as e:
            outcome = type(e).__name__
    s.close()
    took = time.monotonic() - start
    return ("a head trickled a byte every 250 ms: "
            + (f"\"{outcome}\" at {took:.1f} s" if outcome else "still open after 10 s"))


def scrape(port, timeout):
    start = time.monotonic()
    try:
        _, reply = metrics_request(port, [b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"], timeout)
    except OSError as e:
        reply = type(e).__name__
    return f"\"{reply}\" in {time.monotonic() - start:.2f} s"


def n11_idle(ctx):
    hostile = []
    for i in range(200):
        try:
            s = socket.create_connection(("127.0.0.1", ctx.metrics_port), timeout=1)
        except OSError:
            continue
        if i % 2:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        hostile.append(s)
    result = scrape(ctx.metrics_port, 25)
    for s in hostile:
        s.close()
    return f"{len(hostile)} idle or half-sent connections; a scrape (25 s timeout): {result}"


def n12_setup(ctx):
    config = ctx.pb.ModelConfig(name="victim", dense_optimizer="ada_full")
    config.dense_namespaces.add(name="emb", dim=1024)
    create(ctx, config)


def n12_dense(ctx):
    request = ctx.pb.UpdateRequest(model="victim")
    for _ in range(8):
        le = request.examples.add(label=1)
        le.example.dense.add(namespace="emb", values=[0.01 * (i % 7) for i in range(1024)])
    predict = ctx.pb.PredictRequest(model="victim")
    predict.candidates.add().dense.add(namespace="emb", values=[0.01] * 1024)
    result, waits = {}, []

    def update():
        start = time.monotonic()
        try:
            ctx.stub.Update(request, timeout=60, metadata=AUTH)
            result["update"] = "OK"
        except grpc.RpcError as e:
            result["update"] = code(e)
        result["seconds"] = time.monotonic() - start

    thread = threading.Thread(target=update)
    thread.start()
    time.sleep(0.2)
    while thread.is_alive() and len(waits) < 30:
        start = time.monotonic()
        try:
            ctx.stub.Predict(predict, timeout=60, metadata=AUTH)
        except grpc.RpcError:
            pass
        waits.append(time.monotonic() - start)
    thread.join(timeout=70)
    return (f"an Update of 8 examples, ada_full at d = 1024: {result.get('update')} in "
            f"{result.get('seconds', 0):.2f} s; a Predict on that model during it waited up to "
            f"{max(waits, default=0):.2f} s")


def n7_setup(ctx):
    for name in ("m82", "m347"):
        config = ctx.pb.ModelConfig(name=name)
        config.feedback.ttl_seconds = 3600
        create(ctx, config)


def n7_ids(ctx):
    ids = {}
    for model in ("m82", "m347"):
        request = ctx.pb.PredictRequest(model=model, log_impressions=True)
        request.candidates.add().namespaces.add(name="ad").features.add(id=7)
        ids[model] = ctx.stub.Predict(request, timeout=10, metadata=AUTH).predictions[0].impression_id
    impression = ids["m82"]
    feedback = ctx.pb.FeedbackRequest(model="m347")
    feedback.items.add(impression_id=impression, label=1)
    reply = ctx.stub.Feedback(feedback, timeout=10, metadata=AUTH)
    same = "the same id" if ids["m82"] == ids["m347"] else "different ids"
    return (f"one impression logged on each ({same}); a click with m82's id sent to m347: "
            f"{ctx.pb.FeedbackStatus.Name(reply.statuses[0])}")


def n14_setup(ctx):
    ctx.n14_stat = os.stat(ctx.n14_tokens)
    ctx.stub.ListModels(ctx.pb.ListModelsRequest(), timeout=10,
                        metadata=[("authorization", "Bearer " + OLD)])


def n14_tokens(ctx):
    before = ctx.n14_stat
    with open(ctx.n14_tokens, "r+") as f:  # in place: same inode, same size
        f.write(f"admin {ADMIN_TOKEN}\npredict {NEW}\n")
    os.utime(ctx.n14_tokens, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(ctx.n14_tokens)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino, before.st_size, before.st_mtime_ns)
    result, start = "OK", time.monotonic()
    while time.monotonic() - start < 5 and result == "OK":
        time.sleep(0.25)
        try:
            ctx.stub.ListModels(ctx.pb.ListModelsRequest(), timeout=10,
                                metadata=[("authorization", "Bearer " + OLD)])
        except grpc.RpcError as e:
            result = f"{code(e)} after {time.monotonic() - start:.2f} s"
    return ("tokens file rewritten (same size, inode and mtime) without the revoked token, "
            f"reload every 1 s: the revoked token's ListModels: {result}"
            + (" (still OK after 5 s)" if result == "OK" else ""))


OLD, NEW = "revoked-token-0123456789ab", "replaced-token-012345678ab"
MB = 8 << 20
ATTACKS = [
    # name, what, flags before, flags after (None: as before), setup, attack
    ("N1", "1,100 idle TCP connections, soft open-files limit 1024", [], None, None,
     n1_idle_connections),
    ("N2", "40 streams without credentials, 8 MiB messages, all but the last byte", [], None, None,
     n2_partial_messages),
    ("N4a", "GetModel state_digest, 8 predict-role callers for 5 s",
     ["--max_features_per_example=65536"], None, n4_setup, n4_state_digest),
    ("N4b", "GetModel state_digest, 8 admin callers for 5 s (no tokens: every caller is admin)",
     ["--max_features_per_example=65536"], None, n4_setup, n4_state_digest),
    ("N5", "Predict with explain_top_k 100, 4 callers for 5 s", [], None, n5_setup,
     n5_explanations),
    ("N9", "Updates to a model with 8 variants",
     ["--max_features_per_request=400000", "--max_features_per_example=16384"], None, n9_setup,
     n9_variants),
    ("N10", "256 streams that send nothing (--max_open_streams 256)", [],
     ["--stream_idle_timeout_seconds=2"], None, n10_idle_streams),
    ("N11a", "/metrics: a 64 MiB POST", [], None, None, n11_body),
    ("N11b", "/metrics: 20,000 header lines of 4 KB", [], None, None, n11_headers),
    ("N11c", "/metrics: slowloris (a byte every 250 ms)", [], None, None, n11_slowloris),
    ("N11d", "/metrics: 200 idle or half-sent connections, then a scrape", [], None, None,
     n11_idle),
    ("N12", "ada_full Update at d = 1024, 8 examples", ["--worker_threads=2"], None, n12_setup,
     n12_dense),
    ("N7", "impression ids of m82 and m347 (correctness)", [], None, n7_setup, n7_ids),
    ("N14", "a revoked token, the tokens file rewritten with its mtime restored (correctness)",
     ["--auth_reload_interval_seconds=1"], None, n14_setup, n14_tokens),
]


class Context:
    pass


def run_one(binary, side, attack, pb, pb_grpc, tokens):
    name, what, flags, after_flags, setup, fn = attack
    flags = list(flags) + (list(after_flags or []) if side == "after" else [])
    metrics_port = free_port()
    flags += [f"--metrics_port={metrics_port}"]
    if name in WITH_TOKENS:
        flags += [f"--auth_tokens_file={tokens}"]
    if name == "N2":
        flags += [f"--max_message_bytes={MB + 1024}"]
    if name == "N14":
        n14_tokens_file = tokens + ".n14"
        with open(n14_tokens_file, "w") as f:
            f.write(f"admin {ADMIN_TOKEN}\npredict {OLD}\n")
        flags += [f"--auth_tokens_file={n14_tokens_file}"]
    ctx = Context()
    ctx.server = Server(binary, flags, soft_nofile=1024 if name == "N1" else None)
    ctx.metrics_port, ctx.pb = metrics_port, pb
    ctx.n14_tokens = tokens + ".n14"
    ctx.attacker_auth = [("authorization", "Bearer " + PREDICT_TOKEN)] if name == "N4a" else AUTH
    ctx.channel = ctx.server.channel()
    ctx.stub = pb_grpc.ClickdStub(ctx.channel)
    row = {"attack": name, "what": what, "side": side, "binary": binary, "flags": flags}
    sampler = Sampler(ctx.server.proc.pid)
    sampler.start()
    neighbour = Neighbour(ctx.server, pb, pb_grpc)
    try:
        if setup:
            setup(ctx)
        neighbour.start()
        time.sleep(0.5)
        begin = time.monotonic()
        time.sleep(2)
        row["rss_before_mb"] = sampler.mark() / 1024
        middle = time.monotonic()
        try:
            row["outcome"] = fn(ctx)
        except Exception as e:  # noqa: BLE001 - an attack's failure is its outcome
            row["outcome"] = f"the attack failed: {code(e)} {e}"[:300]
        end = time.monotonic()
        row["rss_peak_mb"] = sampler.peak() / 1024
        row["vm_hwm_mb"] = status_kib(ctx.server.proc.pid, "VmHWM") / 1024
        row["neighbour_before"] = neighbour.window(begin, middle)
        row["neighbour_during"] = neighbour.window(middle, end)
        row["attack_seconds"] = end - middle
        alive = ctx.server.proc.poll() is None
        row["server_alive"] = alive
        if not alive:
            row["outcome"] += f"; the server exited {ctx.server.proc.returncode}"
    finally:
        try:
            neighbour.finish()
            sampler.stop_event.set()
            ctx.channel.close()
        finally:
            row["exit"] = ctx.server.stop()
    return row


def fmt_latency(window):
    if not window["calls"]:
        return "no calls"
    failed = f", {window['failed']} failed" if window["failed"] else ""
    return f"{window['p50_ms']:.1f} / {window['p99_ms']:.1f} ({window['calls']}{failed})"


def table(rows):
    out = ["| attack | binary | RSS before -> peak (MB) | neighbour p50 / p99 before, ms (calls) | "
           "neighbour p50 / p99 during, ms (calls) | outcome |", "|---|---|---|---|---|---|"]
    for r in rows:
        if "rss_before_mb" not in r:
            out.append(f"| {r['attack']}: {r['what']} | {r['side']} | | | | {r.get('outcome', '')} |")
            continue
        out.append(
            f"| {r['attack']}: {r['what']} | {r['side']} | {r['rss_before_mb']:.1f} -> "
            f"{r['rss_peak_mb']:.1f} | {fmt_latency(r['neighbour_before'])} | "
            f"{fmt_latency(r['neighbour_during'])} | {r['outcome']} |")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "untrusted"))
    parser.add_argument("--only", default="", help="comma-separated attacks, e.g. N1,N5")
    args = parser.parse_args()
    after = os.environ.get("CLICKD_AFTER", os.path.join(ROOT, "build", "release", "server", "clickd"))
    before = os.environ.get("CLICKD_BEFORE", "")
    sides = ([("before", before)] if before else []) + [("after", after)]
    for side, binary in sides:
        if not os.access(binary, os.X_OK):
            sys.exit(f"attacks.py: the {side} binary {binary} is not executable "
                     "(set CLICKD_AFTER / CLICKD_BEFORE)")
    os.makedirs(args.out, exist_ok=True)
    stubs(args.out)
    from clickd.v1 import clickd_pb2 as pb, clickd_pb2_grpc as pb_grpc
    resource.setrlimit(resource.RLIMIT_NOFILE, (HARD_NOFILE, HARD_NOFILE))
    tokens = os.path.join(args.out, "tokens")
    with open(tokens, "w") as f:
        f.write(f"admin {ADMIN_TOKEN}\npredict {PREDICT_TOKEN}\n")
    only = set(filter(None, args.only.split(",")))
    rows = []
    with open("/proc/loadavg") as f:
        load_start = f.read().split()[:3]
    started = time.time()
    for attack in ATTACKS:
        if only and attack[0] not in only and attack[0].rstrip("abcd") not in only:
            continue
        for side, binary in sides:
            print(f"{attack[0]} {side} ...", file=sys.stderr, flush=True)
            try:
                rows.append(run_one(binary, side, attack, pb, pb_grpc, tokens))
            except Exception as e:  # noqa: BLE001 - a server that did not start is a row
                rows.append({"attack": attack[0], "what": attack[1], "side": side,
                             "outcome": f"not run: {e}"[:300]})
    with open("/proc/loadavg") as f:
        load_end = f.read().split()[:3]
    meta = {"before": before, "after": after, "started_utc": time.strftime(
        "%Y-%m-%d %H:%M:%S", time.gmtime(started)), "seconds": round(time.time() - started),
        "loadavg_start": load_start, "loadavg_end": load_end, "cpus": os.cpu_count()}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    text = table(rows)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(text + "\n")
    print(json.dumps(meta))
    print(text)


if __name__ == "__main__":
    main()
