#!/usr/bin/env python3
"""A fault loop for replication, in the spirit of Jepsen.

Three nats-server nodes (JetStream, R3, sync_interval: always unless
NATS_SYNC_INTERVAL says otherwise) and three clickd replicas, each process in
a network namespace of its own joined by veth pairs to one bridge that this
script makes (addresses 10.77.N.0/24 exist only on this machine, inside these
namespaces; the bridge has no route anywhere else). Four writers send Update
batches, each with an idempotency key, to the replicas in turn, retrying a
failed batch with the same key on the next replica until it is acknowledged.
Each round injects one fault, seeded:

  kill9_leader, kill9_follower      kill -9 of the stream leader's node / another
  stop_leader, stop_follower        SIGSTOP of a node for a few seconds
  kill9_all_nodes, stop_all_nodes   every NATS node killed (-9) or stopped (TERM), restarted
  cut_node, cut_leader              a node's link down: it is alone; the leader cut from the majority
  cut_replica                       a replica's link down: cut from NATS (and its clients)
  kill9_replica                     kill -9 and restart on its data dir
  wipe_replica                      kill -9, data dir deleted, restart (bootstraps)
  stale_replica                     kill -9, data dir replaced by a copy taken rounds ago, restart
  stop_replica                      SIGSTOP of a replica for a few seconds

then heals everything. A replica that reports itself broken (the log was
purged past it while it was away) is restarted, as the ClickdReplicaBroken
runbook says, and counted. At the end every batch not yet acknowledged is sent
again (same key) until it is, and the run checks:

  * no model_version was acknowledged for two different batches;
  * a batch acknowledged more than once (a retry) got the same version;
  * every replica's `updates` equals the acknowledged examples exactly;
  * every replica's state digest is equal, and equal to
    `clickctl replay --offline` of the acknowledged batches in version order;
  * and, if they differ, whether the replicas noticed (replication.diverged,
    peers disagreeing) or forked silently.

It prints one JSON summary line and exits 0 only if every check held.

  fault_loop.py --rounds=N --seed=S --work=DIR
  env: CLICKD_BINARY, CLICKCTL_BINARY, NATS_SERVER (default /usr/local/bin/nats-server),
       PYTHONPATH with clickd's Python stubs (build/*/client/python/stubs),
       NATS_SYNC_INTERVAL ("" for the server's default)
Needs root (ip netns). Every process it starts is stopped by its PID.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import grpc
from clickd.v1 import clickd_pb2 as pb
from clickd.v1 import clickd_pb2_grpc as pb_grpc

NODES = 3
REPLICAS = 3
WRITERS = 4
MODEL = "default"


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)


class Net:
    """One bridge and a namespace per process; links go up and down."""

    def __init__(self, tag, subnet):
        self.tag = tag
        self.subnet = subnet  # the third octet of 10.77.subnet.0/24
        self.bridge = f"ck{tag}br"
        self.spaces = []

    def address(self, host):
        return f"10.77.{self.subnet}.{host}"

    def up(self):
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        sh("ip", "addr", "add", f"{self.address(1)}/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")

    def add(self, name, host):
        ns = f"ck{self.tag}{name}"
        root_end, ns_end = f"ck{self.tag}{name}", "eth0"
        sh("ip", "netns", "add", ns)
        self.spaces.append(ns)
        sh("ip", "link", "add", root_end, "type", "veth", "peer", "name", ns_end, "netns", ns)
        sh("ip", "link", "set", root_end, "master", self.bridge)
        sh("ip", "link", "set", root_end, "up")
        sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{self.address(host)}/24", "dev",
           ns_end)
        sh("ip", "netns", "exec", ns, "ip", "link", "set", ns_end, "up")
        sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        return ns

    def cut(self, name, cut):
        sh("ip", "link", "set", f"ck{self.tag}{name}", "down" if cut else "up")

    def down(self):
        for ns in self.spaces:
            sh("ip", "netns", "del", ns, check=False)
        sh("ip", "link", "del", self.bridge, check=False)


class Process:
    """A child in a namespace, stopped by its PID."""

    def __init__(self, ns, argv, log_path):
        self.ns, self.argv, self.log_path = ns, argv, log_path
        self.proc = None

    def start(self):
        log = open(self.log_path, "a")
        # ip netns exec execs the command: the PID is the server's own.
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns] + self.argv, stdout=log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def send(self, sig):
        if self.alive():
            os.kill(self.proc.pid, sig)

    def stop(self, sig=signal.SIGTERM, wait=20):
        if not self.alive():
            return
        os.kill(self.proc.pid, signal.SIGCONT)
        os.kill(self.proc.pid, sig)
        try:
            self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


class Cluster:
    def __init__(self, work, args):
        self.work = work
        self.args = args
        tag = f"{os.getpid() % 10000:04d}"
        self.net = Net(tag, 20 + os.getpid() % 200)
        self.nodes = []
        self.replicas = []

    def node_host(self, i):
        return 10 + i

    def replica_host(self, i):
        return 20 + i

    def nats_urls(self):
        return ",".join(f"nats://{self.net.address(self.node_host(i))}:4222" for i in range(NODES))

    def replica_address(self, i):
        return f"{self.net.address(self.replica_host(i))}:50051"

    def write_nats_config(self, i):
        sync = os.environ.get("NATS_SYNC_INTERVAL", "always")
        routes = "\n    ".join(f"nats-route://{self.net.address(self.node_host(j))}:6222"
                               for j in range(NODES) if j != i)
        store = os.path.join(self.work, f"n{i}")
        os.makedirs(store, exist_ok=True)
        conf = os.path.join(self.work, f"n{i}.conf")
        with open(conf, "w") as f:
            f.write(f"""server_name: n{i}
listen: {self.net.address(self.node_host(i))}:4222
http: {self.net.address(self.node_host(i))}:8222
max_payload: 8MB
jetstream {{
  store_dir: "{store}"
  max_file_store: 1G
  max_memory_store: 64M
  {"sync_interval: " + sync if sync else ""}
}}
cluster {{
  name: "faults"
  listen: {self.net.address(self.node_host(i))}:6222
  routes: [
    {routes}
  ]
}}
""")
        return conf

    def start(self):
        self.net.up()
        for i in range(NODES):
            ns = self.net.add(f"n{i}", self.node_host(i))
            conf = self.write_nats_config(i)
            p = Process(ns, [self.args.nats_server, "-c", conf],
                        os.path.join(self.work, f"n{i}.log"))
            p.start()
            self.nodes.append(p)
        for i in range(REPLICAS):
            ns = self.net.add(f"r{i}", self.replica_host(i))
            p = Process(ns, self.replica_argv(i), os.path.join(self.work, f"r{i}.log"))
            self.replicas.append(p)
        for i in range(REPLICAS):
            self.replicas[i].start()
        for i in range(REPLICAS):
            wait_serving(self.replica_address(i), 120)

    def replica_argv(self, i):
        flags = [self.args.clickd, f"--address={self.replica_address(i)}", "--metrics_port=0",
                 "--replication=jetstream", f"--nats_url={self.nats_urls()}",
                 "--nats_replicas=3", f"--replica_id=r{i}", f"--data_dir={self.data_dir(i)}",
                 "--snapshot_interval=3s", "--nats_publish_timeout=2s",
                 "--replication_apply_timeout=5s", "--catch_up_timeout=120s",
                 "--shutdown_grace_seconds=2", "--replication_retain_records=50",
                 "--replication_state_digest_records=100"]
        if self.args.min_server_version is not None:
            flags.append(f"--nats_min_server_version={self.args.min_server_version}")
        return flags

    def data_dir(self, i):
        return os.path.join(self.work, f"r{i}-data")

    def leader(self):
        """The stream leader's node index, or None."""
        for i in range(NODES):
            if not self.nodes[i].alive():
                continue
            try:
                url = f"http://{self.net.address(self.node_host(i))}:8222/jsz?streams=1"
                with urllib.request.urlopen(url, timeout=2) as r:
                    jsz = json.load(r)
            except Exception:
                continue
            for account in jsz.get("account_details") or []:
                for stream in account.get("stream_detail") or []:
                    if stream.get("name") == "CLICKD_LOG":
                        leader = (stream.get("cluster") or {}).get("leader", "")
                        if leader.startswith("n") and leader[1:].isdigit():
                            return int(leader[1:])
        return None

    def stop(self):
        for p in self.replicas + self.nodes:
            p.stop(signal.SIGKILL, 10)
        self.net.down()


def wait_serving(address, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with grpc.insecure_channel(address) as channel:
                grpc.channel_ready_future(channel).result(timeout=2)
                stub = pb_grpc.ClickdStub(channel)
                stub.GetModel(pb.GetModelRequest(model=MODEL), timeout=2)
                return True
        except Exception:
            time.sleep(0.5)
    return False


def make_batch(rng, key):
    lines, req = [], pb.UpdateRequest(model=MODEL, idempotency_key=key)
    for _ in range(1 + rng.randrange(20)):
        user, ad, site = rng.randrange(300), rng.randrange(40), rng.randrange(30)
        click = int(rng.randrange(3) == 0) if (user + ad) % 7 == 0 else int(rng.randrange(25) == 0)
        lines.append(f"{click} |user u{user} |ad a{ad} |site s{site}")
        e = req.examples.add()
        e.label = float(click)
        for ns, name in (("user", f"u{user}"), ("ad", f"a{ad}"), ("site", f"s{site}")):
            space = e.example.namespaces.add()
            space.name = ns
            space.features.add().name = name
    return lines, req


class Ledger:
    """What was acknowledged: key -> (version, lines); and every answer seen."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = {}       # key -> version
        self.lines = {}       # key -> lines
        self.conflicts = []   # keys answered with two versions
        self.attempts = 0
        self.failures = 0
        self.errors = {}

    def record(self, key, lines, version):
        with self.lock:
            if key in self.acked and self.acked[key] != version:
                self.conflicts.append((key, self.acked[key], version))
            self.acked.setdefault(key, version)
            self.lines[key] = lines

    def fail(self, code):
        with self.lock:
            self.failures += 1
            self.errors[code] = self.errors.get(code, 0) + 1


def send_until_acked(cluster, ledger, key, lines, req, start, give_up):
    """Sends `req` to the replicas in turn until one acknowledges it."""
    attempt = start
    while time.time() < give_up:
        address = cluster.replica_address(attempt % REPLICAS)
        attempt += 1
        with ledger.lock:
            ledger.attempts += 1
        try:
            with grpc.insecure_channel(address) as channel:
                resp = pb_grpc.ClickdStub(channel).Update(req, timeout=5)
            ledger.record(key, lines, resp.model_version)
            return True
        except grpc.RpcError as e:
            ledger.fail(e.code().name)
            time.sleep(0.05)
    return False


def writer(cluster, ledger, w, rng, stop, pending):
    n = 0
    while not stop.is_set():
        key = f"w{w}-{n}"
        n += 1
        lines, req = make_batch(rng, key)
        if not send_until_acked(cluster, ledger, key, lines, req, w + n, time.time() + 30):
            with ledger.lock:
                pending.append((key, lines, req))


FAULTS = ["kill9_leader", "kill9_follower", "stop_leader", "stop_follower", "kill9_all_nodes",
          "stop_all_nodes", "cut_node", "cut_leader", "cut_replica", "kill9_replica",
          "wipe_replica", "stale_replica", "stop_replica"]


def inject(cluster, fault, rng, stale_copies):
    """Applies one fault and heals it; returns a description."""
    hold = 2 + rng.random() * 4
    leader = cluster.leader()
    node = leader if leader is not None else rng.randrange(NODES)
    if fault in ("kill9_follower", "stop_follower"):
        node = rng.choice([i for i in range(NODES) if i != node])
    replica = rng.randrange(REPLICAS)
    if fault in ("kill9_leader", "kill9_follower"):
        cluster.nodes[node].stop(signal.SIGKILL)
        time.sleep(hold)
        cluster.nodes[node].start()
        return f"{fault} n{node}"
    if fault in ("stop_leader", "stop_follower"):
        cluster.nodes[node].send(signal.SIGSTOP)
        time.sleep(hold)
        cluster.nodes[node].send(signal.SIGCONT)
        return f"{fault} n{node} {hold:.1f}s"
    if fault in ("kill9_all_nodes", "stop_all_nodes"):
        sig = signal.SIGKILL if fault == "kill9_all_nodes" else signal.SIGTERM
        for p in cluster.nodes:
            p.stop(sig)
        time.sleep(hold)
        for p in cluster.nodes:
            p.start()
        return fault
    if fault in ("cut_node", "cut_leader"):
        if fault == "cut_node":
            node = rng.randrange(NODES)
        cluster.net.cut(f"n{node}", True)
        time.sleep(hold + 3)
        cluster.net.cut(f"n{node}", False)
        return f"{fault} n{node} {hold + 3:.1f}s"
    if fault == "cut_replica":
        cluster.net.cut(f"r{replica}", True)
        time.sleep(hold + 3)
        cluster.net.cut(f"r{replica}", False)
        return f"{fault} r{replica}"
    if fault == "stop_replica":
        cluster.replicas[replica].send(signal.SIGSTOP)
        time.sleep(hold)
        cluster.replicas[replica].send(signal.SIGCONT)
        return f"{fault} r{replica}"
    # kill9_replica, wipe_replica, stale_replica
    cluster.replicas[replica].stop(signal.SIGKILL)
    data = cluster.data_dir(replica)
    if fault == "wipe_replica":
        shutil.rmtree(data, ignore_errors=True)
    elif fault == "stale_replica" and stale_copies.get(replica):
        shutil.rmtree(data, ignore_errors=True)
        shutil.copytree(stale_copies[replica], data)
    time.sleep(hold / 2)
    cluster.replicas[replica].start()
    return f"{fault} r{replica}"


def restart_broken(cluster, restarted):
    """Restarts the replicas that report `broken` (purged past while away),
    as the ClickdReplicaBroken runbook says; they bootstrap from the newest
    published snapshot."""
    for i in range(REPLICAS):
        try:
            info = model_info(cluster.replica_address(i), False)
        except grpc.RpcError:
            continue
        if info.replication.broken:
            cluster.replicas[i].stop(signal.SIGTERM)
            cluster.replicas[i].start()
            restarted.append(f"r{i}: {info.replication.reason[:120]}")


def model_info(address, digest):
    with grpc.insecure_channel(address) as channel:
        return pb_grpc.ClickdStub(channel).GetModel(
            pb.GetModelRequest(model=MODEL, state_digest=digest), timeout=30).model


def await_version(address, version, seconds):
    deadline = time.time() + seconds
    req = pb.PredictRequest(model=MODEL, min_model_version=version)
    req.candidates.add().namespaces.add().name = "user"
    while time.time() < deadline:
        try:
            with grpc.insecure_channel(address) as channel:
                pb_grpc.ClickdStub(channel).Predict(req, timeout=5)
            return True
        except grpc.RpcError:
            time.sleep(0.5)
    return False


def offline_digest(clickctl, ledger, path):
    order = sorted(ledger.acked.items(), key=lambda kv: kv[1])
    with open(path, "w") as f:
        for key, _ in order:
            for line in ledger.lines[key]:
                f.write(line + "\n")
    out = subprocess.run([clickctl, "replay", "--offline", "--format=vw", "--json", path],
                         check=True, stdout=subprocess.PIPE, text=True, timeout=600).stdout
    return json.loads(out.strip().splitlines()[-1])["model_digest"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", required=True)
    ap.add_argument("--round_seconds", type=float, default=4)
    ap.add_argument("--min_server_version", default=None,
                    help="passed to clickd's --nats_min_server_version (older servers)")
    args = ap.parse_args()
    args.clickd = os.environ["CLICKD_BINARY"]
    args.clickctl = os.environ["CLICKCTL_BINARY"]
    args.nats_server = os.environ.get("NATS_SERVER", "/usr/local/bin/nats-server")
    version = sh(args.nats_server, "--version").stdout.strip()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    rng = random.Random(args.seed)
    cluster = Cluster(args.work, args)
    ledger = Ledger()
    pending, faults, stale_copies, progress, restarted = [], [], {}, [], []
    # SIGTERM (ctest's timeout) cleans up like an error does.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    started = time.time()
    summary = {"nats_server": version, "seed": args.seed, "rounds": args.rounds}
    ok = False
    try:
        cluster.start()
        stop = threading.Event()
        threads = [threading.Thread(target=writer,
                                    args=(cluster, ledger, w, random.Random(args.seed * 100 + w),
                                          stop, pending), daemon=True) for w in range(WRITERS)]
        for t in threads:
            t.start()
        for r in range(args.rounds):
            time.sleep(args.round_seconds * (0.5 + rng.random()))
            if r % 3 == 0:  # a copy of a replica's data dir, for stale_replica later
                i = rng.randrange(REPLICAS)
                copy = os.path.join(args.work, f"stale-r{i}")
                shutil.rmtree(copy, ignore_errors=True)
                if os.path.isdir(cluster.data_dir(i)):
                    shutil.copytree(cluster.data_dir(i), copy, dirs_exist_ok=True)
                    stale_copies[i] = copy
            fault = rng.choice(FAULTS)
            faults.append(inject(cluster, fault, rng, stale_copies))
            restart_broken(cluster, restarted)
            progress.append(len(ledger.acked))
            print(f"round {r}: {faults[-1]}; {len(ledger.acked)} acknowledged", file=sys.stderr,
                  flush=True)
        stop.set()
        for t in threads:
            t.join(60)
        # Every batch not acknowledged yet is sent again with its key, for
        # at most 2 minutes in all.
        give_up = time.time() + 120
        for key, lines, req in pending:
            send_until_acked(cluster, ledger, key, lines, req, 0, give_up)
        time.sleep(20)  # long enough for a replica cut off last to be found broken
        restart_broken(cluster, restarted)
        checks = check(cluster, ledger, args, pending)
        summary.update(checks)
        ok = checks["ok"]
    finally:
        summary.update({
            "faults": faults, "acknowledged_after_each_round": progress,
            "restarted_broken_replicas": restarted,
            "acknowledged_batches": len(ledger.acked),
            "acknowledged_examples": sum(len(v) for v in ledger.lines.values()),
            "attempts": ledger.attempts, "failed_attempts": ledger.failures,
            "errors": ledger.errors, "seconds": round(time.time() - started, 1)})
        cluster.stop()
        print(json.dumps(summary, sort_keys=True), flush=True)
    return 0 if ok else 1


def check(cluster, ledger, args, pending):
    out = {"ok": False}
    unacked = [key for key, _, _ in pending if key not in ledger.acked]
    versions = sorted(ledger.acked.values())
    twice = sorted({v for v in versions if versions.count(v) > 1}) if versions else []
    out["unacknowledged"] = len(unacked)
    out["versions_acknowledged_twice"] = twice[:10]
    out["keys_with_two_versions"] = ledger.conflicts[:10]
    examples = sum(len(v) for v in ledger.lines.values())
    top = max(versions) if versions else 0
    replicas = []
    give_up = time.time() + 180  # for all replicas together
    for i in range(REPLICAS):
        address = cluster.replica_address(i)
        reached = await_version(address, top, max(5, give_up - time.time()))
        entry = {"replica": i, "reached": reached}
        try:
            info = model_info(address, True)
            entry.update({"updates": info.updates, "digest": info.state_digest,
                          "diverged": info.replication.diverged,
                          "peers_disagreeing": info.replication.peers_disagreeing,
                          "applied": info.replication.applied_sequence})
        except grpc.RpcError as e:
            entry["error"] = e.code().name
        replicas.append(entry)
    out["replicas"] = replicas
    out["offline_digest"] = offline_digest(args.clickctl, ledger,
                                           os.path.join(args.work, "acknowledged.vw"))
    digests = {r.get("digest") for r in replicas}
    out["digests_equal"] = len(digests) == 1
    out["updates_exact"] = all(r.get("updates") == examples for r in replicas)
    out["equal_offline"] = digests == {out["offline_digest"]}
    out["divergence_reported"] = any(r.get("diverged") or r.get("peers_disagreeing")
                                     for r in replicas)
    out["silent_fork"] = not out["digests_equal"] and not out["divergence_reported"]
    out["ok"] = (not unacked and not twice and not ledger.conflicts and out["digests_equal"]
                 and out["updates_exact"] and out["equal_offline"]
                 and all(r["reached"] for r in replicas) and not out["divergence_reported"])
    return out


if __name__ == "__main__":
    sys.exit(main())
