"""Client-side feature hashing, bit for bit the server's (docs/hashing.md).

A client computes the 64-bit keys the server will learn for an example:
to inspect or log what a model sees, to check a pipeline offline, or to
turn its own feature strings into pre-hashed ids. The recipe, with XXH3-64
(python3-xxhash, xxHash 0.8):

  namespace hash     ns  = XXH3_64(namespace name, seed)
  named feature      key = XXH3_64(feature name, ns)
  pre-hashed id      key = XXH3_64(LE64(id), ns)
  bias               key = XXH3_64("clickd.bias", seed), value 1
  cross of 2 or 3    key = XXH3_64(LE64(k1) || LE64(k2) [|| LE64(k3)], seed)
  folding (bits b)   key & (2^b - 1), last, to every key

Values follow the server's single-precision arithmetic: a feature's value
is a float32, a cross's value the float32 product of its parts, repeated
keys merge by float32 addition, and results beyond FLT_MAX saturate.
The server's implementation is core/features/hasher.cc; the golden vectors
of docs/hashing.md are checked in tests/test_hashing.py.
"""

import struct
from typing import Dict, Iterable, List, Mapping, Sequence, Tuple, Union

import xxhash

BIAS_NAME = b"clickd.bias"
FLT_MAX = 3.4028234663852886e38
_MASK64 = (1 << 64) - 1

FeatureKey = Union[str, bytes, int]


def xxh3_64(data: bytes, seed: int) -> int:
    """XXH3-64 of ``data`` with a 64-bit ``seed``."""
    return xxhash.xxh3_64_intdigest(data, seed=seed & _MASK64)


def le64(*keys: int) -> bytes:
    """The keys as consecutive 8-byte little-endian integers."""
    return b"".join(struct.pack("<Q", k & _MASK64) for k in keys)


def _bytes(text: Union[str, bytes]) -> bytes:
    return text.encode("utf-8") if isinstance(text, str) else bytes(text)


def float32(x: float) -> float:
    """Rounds to single precision, saturating at +-FLT_MAX as the server does."""
    if x != x:  # NaN: the server refuses it before hashing; keep it visible
        return x
    if x >= FLT_MAX:
        return FLT_MAX
    if x <= -FLT_MAX:
        return -FLT_MAX
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:  # between FLT_MAX and the rounding threshold
        return FLT_MAX if x > 0 else -FLT_MAX


def namespace_hash(name: Union[str, bytes], seed: int = 0) -> int:
    """The namespace's hash, the seed of its features' keys."""
    return xxh3_64(_bytes(name), seed)


def named_key(ns_hash: int, name: Union[str, bytes]) -> int:
    """The key of a feature named by a string in the namespace hashed ``ns_hash``."""
    return xxh3_64(_bytes(name), ns_hash)


def id_key(ns_hash: int, feature_id: int) -> int:
    """The key of a pre-hashed 64-bit id (still mixed with its namespace)."""
    if not 0 <= feature_id <= _MASK64:
        raise ValueError(f"feature id {feature_id} is not a 64-bit unsigned integer")
    return xxh3_64(le64(feature_id), ns_hash)


def bias_key(seed: int = 0) -> int:
    """The key of the constant bias feature."""
    return xxh3_64(BIAS_NAME, seed)


def cross_key(keys: Sequence[int], seed: int = 0) -> int:
    """The key of a cross of 2 or 3 unfolded keys."""
    if not 2 <= len(keys) <= 3:
        raise ValueError(f"a cross has 2 or 3 keys, not {len(keys)}")
    return xxh3_64(le64(*keys), seed)


def fold(key: int, bits: int) -> int:
    """Folds a key into 2^bits slots (bits 0: unchanged)."""
    return key if bits == 0 else key & ((1 << bits) - 1)


def feature_key(namespace: Union[str, bytes], feature: FeatureKey, seed: int = 0,
                bits: int = 0) -> int:
    """The (folded) key of one feature: a string or bytes name, or an int id."""
    ns = namespace_hash(namespace, seed)
    key = id_key(ns, feature) if isinstance(feature, int) else named_key(ns, feature)
    return fold(key, bits)


# An example for Hasher.hash: either a clickd.v1.Example message, or a
# sequence of (namespace name, [feature, ...]) pairs (a mapping works too),
# a feature being a name (str), an id (int) or a (name or id, value) pair.
NamespaceFeatures = Iterable[Union[FeatureKey, Tuple[FeatureKey, float]]]


def _namespaces(example) -> List[Tuple[str, List[Tuple[FeatureKey, float]]]]:
    """Normalises an Example message or Python structure to [(ns, [(key, value)])]."""
    if hasattr(example, "namespaces"):  # a clickd.v1.Example
        out = []
        for ns in example.namespaces:
            features = []
            for f in ns.features:
                key = f.id if f.WhichOneof("key") == "id" else f.name
                features.append((key, f.value if f.HasField("value") else 1.0))
            out.append((ns.name, features))
        return out
    items = example.items() if isinstance(example, Mapping) else example
    out = []
    for name, features in items:
        pairs = []
        for f in features:
            pairs.append(tuple(f) if isinstance(f, tuple) else (f, 1.0))
        out.append((name, pairs))
    return out


class Hasher:
    """The server's FeatureHasher for one model's hashing config.

    ``Hasher(seed, bits, bias, interactions)`` mirrors ModelConfig.hashing;
    ``Hasher.from_config(model_info.config)`` takes it from a model. ``hash``
    returns the example's keys and values in order of first appearance,
    exactly the coordinates the server learns or scores. Immutable, so safe
    to share between threads.
    """

    def __init__(self, seed: int = 0, bits: int = 0, bias: bool = True,
                 interactions: Sequence[Sequence[str]] = ()):
        if not 0 <= bits <= 62:
            raise ValueError(f"bits is {bits}; must be 0 (no folding) or 1..62")
        for i, names in enumerate(interactions):
            if not 2 <= len(names) <= 3:
                raise ValueError(f"interactions[{i}] has {len(names)} namespaces; must have 2 or 3")
        self.seed = seed & _MASK64
        self.bits = bits
        self.bias = bias
        self.interactions = [list(names) for names in interactions]

    @classmethod
    def from_config(cls, config) -> "Hasher":
        """The hasher of a clickd.v1.ModelConfig (or its HashingConfig)."""
        hashing = config.hashing if hasattr(config, "hashing") else config
        bias = hashing.bias if hashing.HasField("bias") else True
        return cls(hashing.seed, hashing.bits, bias,
                   [list(i.namespaces) for i in hashing.interactions])

    def hash(self, example, candidate=None) -> Dict[int, float]:
        """Returns {key: value} for an example (or a context plus a candidate).

        Features of value 0 are dropped; crosses cross the unfolded keys of
        the namespaces named by each interaction (pooled in order of
        appearance; adjacent equal names cross strictly increasing
        positions); the bias is added; keys are folded; repeated keys merge.
        """
        namespaces = _namespaces(example)
        if candidate is not None:
            namespaces += _namespaces(candidate)
        plain: List[Tuple[int, float]] = []
        pooled: Dict[str, List[Tuple[int, float]]] = {}
        for name, features in namespaces:
            ns = namespace_hash(name, self.seed)
            keyed = pooled.setdefault(name, [])
            for key, value in features:
                value = float32(value)
                if value == 0.0:
                    continue
                k = id_key(ns, key) if isinstance(key, int) else named_key(ns, key)
                plain.append((k, value))
                keyed.append((k, value))
        plain.extend(self._crosses(pooled))
        if self.bias:
            plain.append((bias_key(self.seed), 1.0))
        merged: Dict[int, float] = {}
        for key, value in plain:
            key = fold(key, self.bits)
            merged[key] = float32(merged[key] + value) if key in merged else value
        return merged

    def _crosses(self, pooled: Mapping[str, List[Tuple[int, float]]]) -> List[Tuple[int, float]]:
        out = []
        for names in self.interactions:
            terms = [pooled.get(n, []) for n in names]
            same = [j > 0 and names[j] == names[j - 1] for j in range(len(names))]
            for a, (ka, va) in enumerate(terms[0]):
                for b in range(a + 1 if same[1] else 0, len(terms[1])):
                    kb, vb = terms[1][b]
                    ab = float32(va * vb)
                    if len(names) == 2:
                        out.append((cross_key((ka, kb), self.seed), ab))
                        continue
                    for c in range(b + 1 if same[2] else 0, len(terms[2])):
                        kc, vc = terms[2][c]
                        out.append((cross_key((ka, kb, kc), self.seed), float32(ab * vc)))
        return out
