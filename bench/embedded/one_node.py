"""A one-node replicated deployment for the embedded replica's Python
benchmarks (memory.py, python_latency.py): one nats-server with JetStream
and one clickd replica on 127.0.0.1, in a scratch directory, stopped by
PID and removed on exit. CLICKD_BINARY names the clickd (tests/server.py).
"""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "client", "python", "tests"))
from server import Server  # noqa: E402


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def one_node_deployment(nats_server, prefix="embedded_bench_"):
    """Yields (nats_url, replica Server) once both accept connections."""
    work = tempfile.mkdtemp(prefix=prefix)
    port = _free_port()
    nats = subprocess.Popen([nats_server, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd",
                             os.path.join(work, "nats")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT)
    replica = None
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if nats.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{nats_server} did not listen on port {port}")
                time.sleep(0.05)
        url = f"nats://127.0.0.1:{port}"
        replica = Server([f"--data_dir={work}/r0", "--replication=jetstream", f"--nats_url={url}",
                          "--nats_replicas=1", "--snapshot_interval=1h",
                          "--nats_min_server_version="]).start(ready_timeout=60)
        yield url, replica
    finally:
        if replica is not None:
            replica.stop()
            replica.close()
        os.kill(nats.pid, signal.SIGTERM)
        nats.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)
