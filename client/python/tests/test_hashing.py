"""Client-side hashing: the golden vectors of docs/hashing.md, the recipe's
rules, and agreement with the real server's keys (probed through folding)."""

import json
import os

import pytest

import clickd
from clickd import hashing

# tests/data/hashing_golden.json: the golden vectors of docs/hashing.md, the
# one copy that the C++, Go and Java tests read too.
GOLDEN_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                           "tests", "data", "hashing_golden.json")
with open(GOLDEN_FILE, encoding="utf-8") as _f:
    GOLDEN = json.load(_f)["vectors"]


def _part_key(part, seed):
    feature = part["id"] if "id" in part else part["name"]
    return hashing.feature_key(part["namespace"], feature, seed)


def _compute(row):
    seed, kind = row["seed"], row["kind"]
    if kind == "xxh3":
        return hashing.xxh3_64(row["input"].encode(), seed)
    if kind == "namespace":
        return hashing.namespace_hash(row["namespace"], seed)
    if kind == "feature":
        return hashing.fold(_part_key(row, seed), row.get("bits", 0))
    if kind == "bias":
        return hashing.bias_key(seed)
    if kind == "cross":
        return hashing.cross_key([_part_key(p, seed) for p in row["parts"]], seed)
    raise ValueError(f"unknown kind {kind!r}")


@pytest.mark.parametrize("row", range(len(GOLDEN)))
def test_golden_vectors(row):
    want = int(GOLDEN[row]["key"], 16)
    got = _compute(GOLDEN[row])
    assert got == want, f"{GOLDEN[row]}: got {got:016x}, want {want:016x}"


def test_hasher_matches_the_golden_keys():
    h = clickd.Hasher(seed=0, interactions=[["user", "ad"]])
    keys = h.hash({"user": ["country=FR"], "ad": ["campaign=7"]})
    assert keys == {0x4E7766629EAD153D: 1.0, 0xD5A62F69DD533E23: 1.0,
                    0xEC2EA4DE06D3DA4E: 1.0, 0x0D3C7B1005D35E2E: 1.0}
    folded = clickd.Hasher(bits=18, bias=False).hash({"user": ["country=FR"]})
    assert folded == {0x1153D: 1.0}


def test_values_drop_multiply_merge_and_saturate():
    h = clickd.Hasher(bias=False, interactions=[["a", "b"]])
    keys = h.hash({"a": [("x", 0.5), ("zero", 0.0)], "b": [("y", 3.0)]})
    cross = hashing.cross_key((hashing.feature_key("a", "x"), hashing.feature_key("b", "y")))
    assert keys[cross] == 1.5
    assert hashing.feature_key("a", "zero") not in keys
    assert len(keys) == 3
    # The same feature twice merges by adding; the sum saturates at FLT_MAX.
    twice = clickd.Hasher(bias=False).hash({"a": [("x", 0.1), ("x", 0.2)]})
    assert twice == {hashing.feature_key("a", "x"): hashing.float32(hashing.float32(0.1) +
                                                                    hashing.float32(0.2))}
    big = clickd.Hasher(bias=False).hash({"a": [("x", 3e38), ("x", 3e38)]})
    assert list(big.values()) == [hashing.FLT_MAX]


def test_self_interactions_cross_each_pair_once():
    pair = clickd.Hasher(bias=False, interactions=[["w", "w"]])
    assert len(pair.hash({"w": ["a", "b", "c"]})) == 3 + 3  # features + C(3, 2)
    triple = clickd.Hasher(bias=False, interactions=[["w", "w", "w"]])
    assert len(triple.hash({"w": ["a", "b", "c", "d"]})) == 4 + 4  # + C(4, 3)
    # Namespaces named twice pool their features; a context and a candidate
    # together are one example.
    pooled = pair.hash([("w", ["a"]), ("w", ["b"])])
    assert pooled == pair.hash({"w": ["a", "b"]})
    assert pair.hash({"w": ["a"]}, {"w": ["b"]}) == pooled


def test_hasher_from_a_model_config():
    config = clickd.model_config({"name": "m", "hashing": {"seed": "42", "bits": 20,
                                                           "bias": False}})
    h = clickd.Hasher.from_config(config)
    assert (h.seed, h.bits, h.bias) == (42, 20, False)
    assert h.hash({"user": ["country=FR"]}) == {0x29066DE8C7C5C6E4 & (2**20 - 1): 1.0}


def test_an_example_message_hashes_like_its_shorthand():
    h = clickd.Hasher(interactions=[["user", "ad"]])
    shorthand = {"user": ["country=FR", ("age", 0.25), 12345], "ad": [7]}
    assert h.hash(clickd.example(shorthand)) == h.hash(shorthand)


def _probe(hasher, slot, want_collision):
    """A feature of namespace "probe" whose folded key is (or is not) `slot`."""
    for i in range(100000):
        keys = list(hasher.hash({"probe": [f"p{i}"]}))
        if (keys[0] == slot) == want_collision:
            return f"p{i}"
    raise AssertionError("no probe found")


@pytest.mark.parametrize("feature", ["country=FR", 12345])
def test_client_keys_are_the_servers(client, feature):
    """Learns one feature in a model with 2^8 slots, then scores probes that
    the client's hasher puts in the same slot (margin != 0) or another slot
    (margin 0). A hasher that differed from the server's would get this
    right for one feature by chance with probability 1/256."""
    name = f"hash-probe-{feature}".replace("=", "-")
    info = client.create_model({"name": name, "hashing": {"bits": 8, "bias": False, "seed": "7"}})
    try:
        hasher = clickd.Hasher.from_config(info.config)
        client.update(name, [({"user": [feature]}, 1)])
        (slot,) = hasher.hash({"user": [feature]})
        same = _probe(hasher, slot, True)
        other = _probe(hasher, slot, False)
        scores = client.predict(name, [{"probe": [same]}, {"probe": [other]}])
        assert scores.predictions[0].margin != 0
        assert scores.predictions[1].margin == 0
    finally:
        client.delete_model(name)


def test_client_cross_keys_are_the_servers(client):
    name = "hash-probe-cross"
    info = client.create_model({"name": name, "hashing": {
        "bits": 8, "bias": False, "interactions": [{"namespaces": ["user", "ad"]}]}})
    try:
        hasher = clickd.Hasher.from_config(info.config)
        example = {"user": ["country=FR"], "ad": ["campaign=7"]}
        client.update(name, [(example, 1)])
        keys = hasher.hash(example)
        cross = hashing.fold(hashing.cross_key((hashing.feature_key("user", "country=FR"),
                                                hashing.feature_key("ad", "campaign=7"))), 8)
        assert cross in keys
        learned = set(keys)
        plain = clickd.Hasher(bits=8, bias=False)
        hit = next(f"p{i}" for i in range(100000)
                   if list(plain.hash({"probe": [f"p{i}"]}))[0] == cross)
        miss = next(f"p{i}" for i in range(100000)
                    if list(plain.hash({"probe": [f"p{i}"]}))[0] not in learned)
        scores = client.predict(name, [{"probe": [hit]}, {"probe": [miss]}])
        assert scores.predictions[0].margin != 0
        assert scores.predictions[1].margin == 0
    finally:
        client.delete_model(name)


def test_every_wire_form_learns_the_same_model(client):
    """The same updates and predicts sent as Feature messages, packed names
    and ids, and keys hashed here: identical state digests and margins, with
    interactions and values other than 1."""
    config = {"hashing": {"seed": "11", "interactions": [{"namespaces": ["user", "ad"]}]}}
    examples = [({"user": ["country=FR", ("age", 0.5), 12345], "ad": ["campaign=7", (99, 2.0)]}, 1),
                ({"user": ["country=DE"], "ad": ["campaign=7", "creative=3"]}, 0),
                ({"user": [("age", 0.25)], "ad": [(99, -1.5)]}, 1)]
    candidates = [{"ad": ["campaign=7", (99, 2.0)]}, {"ad": ["creative=3"]}]
    context = {"user": ["country=FR", ("age", 0.5)]}
    digests, margins = [], []
    for wire in ("features", "packed", "keys"):
        name = f"wire-{wire}"
        info = client.create_model(dict(config, name=name))
        try:
            seed = info.config.hashing.seed
            request = clickd.messages.update_request(name, examples, wire=wire, seed=seed)
            assert any(ns.features for e in request.examples for ns in e.example.namespaces) == \
                (wire == "features")
            client.update(request)
            digests.append(client.state_digest(name))
            scores = client.predict(name, candidates, context, wire=wire, seed=seed)
            margins.append([p.margin for p in scores.predictions])
        finally:
            client.delete_model(name)
    assert digests[0] == digests[1] == digests[2]
    assert margins[0] == margins[1] == margins[2]
    assert margins[0][0] != 0


def test_wire_keys_needs_the_seed():
    with pytest.raises(ValueError, match="seed"):
        clickd.messages.example({"user": ["a"]}, wire="keys")
    with pytest.raises(ValueError, match="wire"):
        clickd.messages.example({"user": ["a"]}, wire="msgpack")
