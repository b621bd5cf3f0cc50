#!/usr/bin/python3
"""Computes what sharding one clickd model by key range would cost, on paper.

Nothing here runs clickd: every input is a figure measured elsewhere in the
repository (the doc and line are named next to it) or a stated assumption.
Prints four groups of markdown tables and draws docs/img/scale_out_*.png:

  (a) memory: bytes per coordinate per optimizer, coordinates that fit in
      16/64/256 GiB, and memory per shard against the number of shards;
  (b) Predict CPU: candidates scored per second per core, cores for 100k and
      1M scores/s, and the extra CPU a k-way fan-out spends;
  (c) Predict fan-out latency: p50/p99 of the slowest of k shards, each
      shard's latency lognormal, fitted to p50/p99 measured by bench/rpc;
  (d) record size: bytes per example of the batch codec
      (core/persist/batch_codec.cc) and what recording margins adds.

Run from the repository root with Debian's python3 (python3-matplotlib,
python3-numpy):  /usr/bin/python3 bench/scale_out/simulate.py
Deterministic: the Monte Carlo check uses a fixed seed.
"""

import argparse
import math
import os
from statistics import NormalDist

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

GIB = 2**30
Z = NormalDist()

# ---------------------------------------------------------------------------
# (a) Memory per coordinate.
# An absl flat_hash_map slot is sizeof(pair<const uint64_t, State>), padded
# to 8 bytes, plus one control byte; the table doubles when its load reaches
# 7/8, so the load lies in [7/16, 7/8] (docs/archive/performance_training.md (c)).
LOAD_MAX = 7 / 8
LOAD_MIN = 7 / 16

# name: (key + state bytes as stored in a snapshot, slot bytes, measured table
# bytes per coordinate or None, where the state layout is read from).
OPTIMIZERS = {
    "ftrl, adagrad, adagrad_da, pc_ogd, cw": (16, 16, 35.9,
                                              "core/optim/{ftrl,adagrad,box_ogd,cw}.h: two floats"),
    "sgd, global_ogd, pa": (12, 16, 35.9, "core/optim/{sgd,box_ogd,pa}.h: one float; slot pads to 16"),
    "metagrad_diag": (184, 184, 391.1, "core/optim/metagrad_diag.h: 44 floats (176 bytes)"),
}
MEASURED_SOURCE = ("docs/archive/performance_training.md (c) and 'Optimizers compared': 35.9 and 391.1 table bytes "
                   "per coordinate on the 2M-example synthetic log (load 0.47)")

# Assumption (ours): the share of a machine's RAM the model's tables may take;
# the rest is the OS, gRPC buffers, allocator slack, the page cache of the
# replica's snapshot files. Not measured.
USABLE_FRACTION = 0.8
# A snapshot (Model::ExportState, core/model/linear_model.h) copies every
# coordinate into a sorted vector of (key, state) pairs and then into a byte
# string of key + state while the table is alive: at least 2 x (key + state)
# bytes per coordinate at the peak. Read from the code, not measured.
SNAPSHOT_COPIES = 2
RAM_SIZES_GIB = [16, 64, 256]


def table_bytes(slot, load):
    return (slot + 1) / load


def planning_bytes(key_state, slot):
    """Worst-case table (just after a growth) plus a snapshot's copy."""
    return table_bytes(slot, LOAD_MIN) + SNAPSHOT_COPIES * key_state


def memory_tables():
    print("## (a) Memory\n")
    print(f"Usable share of RAM (assumption): {USABLE_FRACTION}; snapshot copy: "
          f"{SNAPSHOT_COPIES} x (key + state) per coordinate (read from ExportState).\n")
    print("| optimizer | key + state | slot + ctrl | table B/coord: best (load 7/8) / measured / "
          "worst (7/16) | planning B/coord (worst + snapshot) | "
          + " | ".join(f"coordinates in {g} GiB" for g in RAM_SIZES_GIB) + " |")
    print("|---|---|---|---|---|" + "---|" * len(RAM_SIZES_GIB))
    for name, (key_state, slot, measured, _) in OPTIMIZERS.items():
        plan = planning_bytes(key_state, slot)
        fits = [USABLE_FRACTION * g * GIB / plan for g in RAM_SIZES_GIB]
        print(f"| {name} | {key_state} | {slot + 1} | {table_bytes(slot, LOAD_MAX):.1f} / "
              f"{measured} / {table_bytes(slot, LOAD_MIN):.1f} | {plan:.1f} | "
              + " | ".join(f"{f / 1e6:,.0f}M" for f in fits) + " |")
    print(f"\nMeasured figures: {MEASURED_SOURCE}.\n")


def memory_per_shard(coordinates, shards, key_state, slot):
    """Bytes one shard needs, at the planning figure, for an even split.

    Key ranges of a mixed 64-bit hash split coordinates evenly up to a
    binomial spread; the largest of k shards is taken at +3 standard
    deviations."""
    per = coordinates / shards
    largest = per + 3 * math.sqrt(per * (1 - 1 / shards)) if shards > 1 else per
    return largest * planning_bytes(key_state, slot)


def memory_plot(out_dir):
    ks = [1, 2, 4, 8, 16, 32, 64]
    cases = [(1e9, "ftrl, adagrad, adagrad_da, pc_ogd, cw"), (1e10, "ftrl, adagrad, adagrad_da, pc_ogd, cw"),
             (1e9, "metagrad_diag")]
    print("Memory per shard (GiB, planning figure) against shards k:\n")
    print("| coordinates | optimizer | " + " | ".join(f"k={k}" for k in ks) + " |")
    print("|---|---|" + "---|" * len(ks))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for coords, opt in cases:
        key_state, slot, _, _ = OPTIMIZERS[opt]
        gib = [memory_per_shard(coords, k, key_state, slot) / GIB for k in ks]
        print(f"| {coords:.0e} | {opt} | " + " | ".join(f"{g:,.1f}" for g in gib) + " |")
        label = f"{coords:.0e} coords, {opt.split(',')[0]}" + (" and co." if "," in opt else "")
        ax.plot(ks, gib, marker="o", label=label)
    for g in RAM_SIZES_GIB:
        ax.axhline(USABLE_FRACTION * g, color="grey", linestyle=":", linewidth=1)
        ax.text(ks[-1] * 1.05, USABLE_FRACTION * g, f"{g} GiB x {USABLE_FRACTION}", va="center",
                fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("shards k")
    ax.set_ylabel("GiB per shard (worst-case table + snapshot copy)")
    ax.set_title("Memory per shard (on paper)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "scale_out_memory.png"), dpi=110)
    plt.close(fig)
    print()


# ---------------------------------------------------------------------------
# (b) Predict CPU per candidate.
# (name, server CPU us per candidate, source)
CPU_PER_CANDIDATE = [
    ("model only: hash + Model::Margin, 20 features", 20 * (40.2 + 8.7) / 1000,
     "docs/archive/performance_training.md (b): Margin 40.2 ns/feature, Hash 8.7 ns/feature, 17 MiB table"),
    ("RPC, 20 context + 100 candidates x 20, 8 in flight", 570.2 / 100,
     "docs/performance_rpc.md 'CPU time per call': 570.2 us server CPU per request"),
    ("RPC, same request, by throughput on one pinned core", 1e6 / 129960,
     "docs/performance_rpc.md 'What isolation costs': 129,960 candidates/s (final)"),
    ("RPC, one candidate x 40 per request, 64 in flight", 29.2,
     "docs/performance_rpc.md 'CPU time per call': 29.2 us server CPU per call"),
]
HEALTH_CPU_8 = 20.4  # us server CPU per health check at 8 in flight (performance_rpc.md)
BATCH_CPU = 570.2  # us server CPU per 20 + 100x20 request at 8 in flight
TARGETS = [1e5, 1e6]


def cpu_tables():
    print("## (b) Predict CPU\n")
    print("| path | server CPU us/candidate | candidates/s per core | "
          + " | ".join(f"cores for {t:,.0f}/s" for t in TARGETS) + " | source |")
    print("|---|---|---|" + "---|" * len(TARGETS) + "---|")
    for name, us, src in CPU_PER_CANDIDATE:
        print(f"| {name} | {us:.2f} | {1e6 / us:,.0f} | "
              + " | ".join(f"{t * us / 1e6:.1f}" for t in TARGETS) + f" | {src} |")
    print("\nA 100-candidate request split over k shards: each shard pays one RPC's fixed "
          f"cost (a health check's {HEALTH_CPU_8} us at 8 in flight) and 1/k of the rest "
          f"({BATCH_CPU} - {HEALTH_CPU_8} us). Router CPU not included.\n")
    print("| shards k | server CPU per request, us (all shards) | vs k = 1 | candidates/s per core |")
    print("|---|---|---|---|")
    for k in [1, 2, 4, 8, 16, 32]:
        cpu = k * HEALTH_CPU_8 + (BATCH_CPU - HEALTH_CPU_8)
        print(f"| {k} | {cpu:,.0f} | {cpu / BATCH_CPU:.2f}x | {100e6 / cpu:,.0f} |")
    print()


# Applier CPU per example (ns) on one shard replica: every shard decodes and
# hashes the whole record, and learns only its 1/k of the features.
HASH_NS = 356  # FeatureHasher::Hash, 41 features (docs/archive/performance_training.md (b))
LEARN_NS = {"ftrl": 2156,  # Model::Learn, ftrl, docs/archive/performance_training.md (b)
            # ftrl's plus the ~9.7 us metagrad_diag adds end to end (performance.md)
            "metagrad_diag": 2156 + 9700}


def applier_table():
    print("Applier CPU per example on one shard (ns): Hash of the whole example + Learn / k "
          "(decoding the record not counted):\n")
    ks = [1, 2, 4, 8, 16, 32]
    print("| optimizer | " + " | ".join(f"k={k}" for k in ks) + " | examples/s per shard at k=32 |")
    print("|---|" + "---|" * len(ks) + "---|")
    for opt, learn in LEARN_NS.items():
        ns = [HASH_NS + learn / k for k in ks]
        print(f"| {opt} | " + " | ".join(f"{v:,.0f}" for v in ns) + f" | {1e9 / ns[-1]:,.0f} |")
    print()


# ---------------------------------------------------------------------------
# (c) Fan-out latency. Each shard's Predict latency is lognormal with the
# median and 99th percentile measured by bench/rpc (docs/performance_rpc.md,
# run of 2026-11-21, a loaded 2-core VM, client and server on one host).
LATENCY_CASES = [
    ("Predict 1x40, 1 in flight", 125.7, 181.8),
    ("Predict 20 + 100x20, 1 in flight", 665.6, 899.1),
    ("Predict 1x40, open loop 10k/s", 225.8, 2036.0),
]
# A router in between adds one more hop: a health check round trip.
HOP = ("health Check, 1 in flight", 97.0, 152.1)
SHARDS = [1, 2, 4, 8, 16, 32, 64]
MC_DRAWS = 200_000


def lognormal_fit(p50, p99):
    return math.log(p50), math.log(p99 / p50) / Z.inv_cdf(0.99)


def max_quantile(mu, sigma, k, p):
    """The p-quantile of the largest of k independent lognormal draws."""
    return math.exp(mu + sigma * Z.inv_cdf(p ** (1 / k)))


def latency_tables(out_dir):
    print("## (c) Predict fan-out latency\n")
    rng = np.random.default_rng(20261123)
    hop_mu, hop_sigma = lognormal_fit(HOP[1], HOP[2])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, p50, p99 in LATENCY_CASES:
        mu, sigma = lognormal_fit(p50, p99)
        print(f"**{name}**: measured p50 {p50} us, p99 {p99} us -> lognormal "
              f"mu = ln({p50}), sigma = {sigma:.3f}.\n")
        print("| shards k | p50 us (exact) | p99 us (exact) | p50 / p99 Monte Carlo | "
              "p99 vs k=1 | p50 / p99 with a router hop |")
        print("|---|---|---|---|---|---|")
        p50s, p99s = [], []
        for k in SHARDS:
            e50, e99 = max_quantile(mu, sigma, k, 0.5), max_quantile(mu, sigma, k, 0.99)
            draws = rng.lognormal(mu, sigma, size=(MC_DRAWS, k)).max(axis=1)
            m50, m99 = np.percentile(draws, [50, 99])
            routed = draws + rng.lognormal(hop_mu, hop_sigma, size=MC_DRAWS)
            r50, r99 = np.percentile(routed, [50, 99])
            p50s.append(e50)
            p99s.append(e99)
            print(f"| {k} | {e50:,.0f} | {e99:,.0f} | {m50:,.0f} / {m99:,.0f} | "
                  f"{e99 / p99:.2f}x | {r50:,.0f} / {r99:,.0f} |")
        print()
        line = ax.plot(SHARDS, p50s, marker="o", label=f"{name}: p50")[0]
        ax.plot(SHARDS, p99s, marker="s", linestyle="--", color=line.get_color(),
                label=f"{name}: p99")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("shards k (Predict waits for the slowest)")
    ax.set_ylabel("latency, us")
    ax.set_title("Fan-out Predict: max of k lognormal shard latencies")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "scale_out_latency.png"), dpi=110)
    plt.close(fig)
    print(f"Monte Carlo: {MC_DRAWS:,} draws per k, seed 20261123; router hop lognormal fitted to "
          f"the {HOP[0]} (p50 {HOP[1]}, p99 {HOP[2]} us).\n")


# ---------------------------------------------------------------------------
# (d) Record size: the batch codec, byte for byte (core/persist/batch_codec.cc).
#   batch    := group_count u32, group*
#   group    := has_context u8, [context example], count u32, (example, label f32, importance f32)*
#   example  := ns_count u32, (name string, feature_count u32, feature*)*   (no dense values here)
#   feature  := kind u8, (id u64 | name string), value f32;  string := length u32, bytes
def feature_bytes(name_len=None):
    return 1 + (8 if name_len is None else 4 + name_len) + 4


def example_bytes(namespaces):
    """namespaces: list of (namespace name length, list of feature sizes)."""
    return 4 + sum(4 + ns_len + 4 + sum(fs) for ns_len, fs in namespaces)


def batch_bytes(groups):
    """groups: list of (context example bytes or None, list of example bytes)."""
    total = 4
    for context, examples in groups:
        total += 1 + (context or 0) + 4 + sum(e + 8 for e in examples)
    return total


def loadgen_name_len(j):
    """Expected length of loadgen's "a<j>=<v>", v Zipf(1.1) over 1..10,000
    (client/clickctl/loadgen_requests.cc)."""
    weights = [v**-1.1 for v in range(1, 10001)]
    total = sum(weights)
    digits = sum(w * len(str(v)) for v, w in zip(range(1, 10001), weights)) / total
    return 1 + len(str(j)) + 1 + digits


# Synthetic click log (docs/performance.md, "The synthetic click log"):
# namespace -> (features per example, token width).
CLICK_LOG = {"u": (1, 5), "s": (12, 4), "q": (8, 5), "p": (6, 5), "a": (4, 4), "d": (6, 3),
             "t": (3, 3)}

# Per-example quantities a shard cannot compute from the record alone
# (see docs/scale-out.md): the margin always; CW's variance V; global OGD's
# count of new coordinates. Plus one u64 per record: the model version the
# margins were read at.
MARGIN_BYTES = 8  # double, as LinearModel computes it
EXTRA_BYTES = {"margin only (ftrl, adagrad, adagrad_da, pc_ogd, sgd, pa, metagrad_diag)": 8,
               "cw: margin + V (double)": 16,
               "global_ogd: margin + new coordinates (u32)": 12}
RECORD_HEADER = 8


def record_shapes():
    name_lens = [loadgen_name_len(j) for j in range(40)]
    loadgen_example = example_bytes([(2, [feature_bytes(n) for n in name_lens])])
    click = example_bytes([(1, [feature_bytes(w)] * n) for n, w in CLICK_LOG.values()])
    ipinyou = example_bytes([(0, [feature_bytes()] * 16)])
    ctx = example_bytes([(4, [feature_bytes(loadgen_name_len(j)) for j in range(20)])])
    cand = example_bytes([(2, [feature_bytes(loadgen_name_len(j)) for j in range(20)])])
    one = example_bytes([(0, [feature_bytes()])])
    return [
        ("loadgen UpdateStream message: 100 examples x 40 named features", 100,
         batch_bytes([(None, [loadgen_example])] * 100)),
        ("synthetic click log: 100 examples, 7 namespaces, 40 tokens", 100,
         batch_bytes([(None, [click])] * 100)),
        ("iPinYou LIBSVM: 100 examples x 16 ids", 100, batch_bytes([(None, [ipinyou])] * 100)),
        ("one impression: 20 context + 100 candidates x 20 named", 100,
         batch_bytes([(ctx, [cand] * 100)])),
        ("1 example x 1 id (the smallest)", 1, batch_bytes([(None, [one])])),
    ]


def record_tables(out_dir):
    print("## (d) Record size\n")
    print("| batch | examples | codec bytes | bytes/example | " +
          " | ".join(EXTRA_BYTES) + " |")
    print("|---|---|---|---|" + "---|" * len(EXTRA_BYTES))
    for name, n, size in record_shapes():
        extras = [(n * b + RECORD_HEADER) / size for b in EXTRA_BYTES.values()]
        print(f"| {name} | {n} | {size:,.0f} | {size / n:,.1f} | "
              + " | ".join(f"+{e:.1%}" for e in extras) + " |")
    print(f"\nEach column adds the per-example bytes plus one {RECORD_HEADER}-byte read version "
          "per record.\n")
    # Overhead against features per example, for id and for named features.
    features = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, fsize in [("pre-hashed ids (13 B/feature)", feature_bytes()),
                         ("names of 8 bytes (17 B/feature)", feature_bytes(8))]:
        for extra_name, extra in [("margin", 8), ("margin + V (cw)", 16)]:
            over = []
            for f in features:
                ex = example_bytes([(2, [fsize] * f)])
                size = batch_bytes([(None, [ex])] * 100)
                over.append(100 * (100 * extra + RECORD_HEADER) / size)
            ax.plot(features, over, marker="o", label=f"{label}, {extra_name}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("features per example (one namespace, 100 examples per record)")
    ax.set_ylabel("record growth, %")
    ax.set_title("Bytes added to an Update record by recorded margins")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "scale_out_record.png"), dpi=110)
    plt.close(fig)


# Every replica of every shard reads the whole stream. Assumption (ours): a
# model learning 100k examples/s; R = 3 replicas per shard (the design's
# default --nats_replicas is 3, used here for the replicas of a shard too).
EGRESS_RATE = 1e5
EGRESS_REPLICAS = 3


def egress_table():
    name, n, size = record_shapes()[1]  # the synthetic click log
    per_example = (size + n * MARGIN_BYTES + RECORD_HEADER) / n
    print(f"\nStream reads at {EGRESS_RATE:,.0f} examples/s of the synthetic click log "
          f"({per_example:.0f} bytes/example with margins), R = {EGRESS_REPLICAS} replicas "
          "per shard, every replica reading every record:\n")
    print("| shards k | consumers | MB/s read from NATS |")
    print("|---|---|---|")
    for k in [1, 4, 16, 64]:
        consumers = k * EGRESS_REPLICAS
        print(f"| {k} | {consumers} | {consumers * EGRESS_RATE * per_example / 1e6:,.0f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--img", default="docs/img", help="where the PNGs go")
    args = parser.parse_args()
    os.makedirs(args.img, exist_ok=True)
    memory_tables()
    memory_plot(args.img)
    cpu_tables()
    applier_table()
    latency_tables(args.img)
    record_tables(args.img)
    egress_table()
    print(f"\nwrote {args.img}/scale_out_memory.png, scale_out_latency.png, scale_out_record.png")


if __name__ == "__main__":
    main()
