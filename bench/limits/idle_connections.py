#!/usr/bin/python3
"""Issue 33, N1: idle TCP connections against descriptors.

  /usr/bin/python3 bench/limits/idle_connections.py BINARY [CONNECTIONS]

Starts BINARY (clickd) on a free port of 127.0.0.1 with a soft open-files
limit of 1024 (the hard limit as it is), opens CONNECTIONS (1100) TCP
connections that send nothing, then while they are open and again after
they are closed times a grpc.health.v1 Check on a new connection, and prints
the server's open descriptors and RSS. Stops the server by PID.
"""
import os, resource, socket, subprocess, sys, time
import grpc


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key):
                return line.split(":")[1].strip()


def health(port, timeout=5.0):
    start = time.monotonic()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        check = channel.unary_unary("/grpc.health.v1.Health/Check")
        try:
            reply = check(b"", timeout=timeout)
            result = "SERVING" if reply == b"\x08\x01" else repr(reply)
        except grpc.RpcError as e:
            result = e.code().name
    return result, time.monotonic() - start


def main():
    binary = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1100
    port = free_port()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # for this script's sockets
    server = subprocess.Popen(
        [binary, f"--address=127.0.0.1:{port}", "--metrics_port=0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard)))
    try:
        for _ in range(100):
            if health(port, 0.2)[0] == "SERVING":
                break
            time.sleep(0.1)
        idle = []
        for _ in range(count):
            s = socket.socket()
            try:
                s.connect(("127.0.0.1", port))
                idle.append(s)
            except OSError:
                s.close()
        time.sleep(1)
        fds = len(os.listdir(f"/proc/{server.pid}/fd"))
        during = health(port)
        for s in idle:
            s.close()
        time.sleep(2)
        after = health(port)
        print(f"{binary}: {len(idle)} idle connections; server descriptors {fds}, "
              f"RSS {status(server.pid, 'VmRSS')}; health while open: {during[0]} "
              f"in {during[1]:.2f} s; after closing them: {after[0]} in {after[1]:.2f} s")
    finally:
        server.terminate()
        server.wait(timeout=30)
        err = server.stderr.read().decode(errors="replace")
        lines = [l for l in err.splitlines() if "accept" in l]
        if lines:
            print("  server stderr:", lines[0][:160])


if __name__ == "__main__":
    main()
