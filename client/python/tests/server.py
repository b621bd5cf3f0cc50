"""Runs the real clickd binary for the tests, on a free loopback port.

The binary is $CLICKD_BINARY (CMake passes $<TARGET_FILE:clickd>). clickd
listens on 127.0.0.1:0, so the kernel picks a free port, and prints
`clickd: serving N model(s) on ADDRESS (port P)` once it is ready; the
server is stopped by its PID (SIGTERM, then SIGKILL after a bounded wait).
"""

import os
import re
import signal
import subprocess
import tempfile
import time
from typing import List, Optional, Sequence

READY = re.compile(r"clickd: serving \d+ model\(s\) on \S+ \(port (\d+)\)")


def binary() -> str:
    path = os.environ.get("CLICKD_BINARY", "")
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError("set CLICKD_BINARY to the clickd binary (ctest does)")
    return path


class Server:
    """One clickd process; ``address`` is "127.0.0.1:PORT" once started."""

    def __init__(self, flags: Sequence[str] = (), port: int = 0):
        self.flags: List[str] = list(flags)
        self.port = port
        self.address = ""
        self.proc: Optional[subprocess.Popen] = None
        self._log = tempfile.NamedTemporaryFile(prefix="clickd_py_", suffix=".log", delete=False)

    def start(self, ready_timeout: float = 30.0) -> "Server":
        args = [binary(), f"--address=127.0.0.1:{self.port}", "--metrics_port=0", *self.flags]
        self._log.truncate(0)
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            match = READY.search(self.output())
            if match:
                self.port = int(match.group(1))
                self.address = f"127.0.0.1:{self.port}"
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"clickd exited with {self.proc.returncode}:\n{self.output()}")
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"clickd was not ready within {ready_timeout} s:\n{self.output()}")

    def output(self) -> str:
        with open(self._log.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stop(self, grace: float = 15.0) -> Optional[int]:
        """Stops the server by PID; returns its exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=grace)
        code = self.proc.returncode
        self.proc = None
        return code

    def close(self) -> None:
        self.stop()
        os.unlink(self._log.name)
