package clickd

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/zeebo/xxh3"

	pb "github.com/clickd/clickd/client/go/clickdpb"
)

// The recipe of docs/hashing.md, bit for bit the server's
// (core/features/hasher.cc), with XXH3-64:
//
//	namespace hash     ns  = XXH3_64(namespace name, seed)
//	named feature      key = XXH3_64(feature name, ns)
//	pre-hashed id      key = XXH3_64(LE64(id), ns)
//	bias               key = XXH3_64("clickd.bias", seed), value 1
//	cross of 2 or 3    key = XXH3_64(LE64(k1) || LE64(k2) [|| LE64(k3)], seed)
//	folding (bits b)   key & (2^b - 1), last, to every key
//
// The golden vectors of tests/data/hashing_golden.json are checked in
// hashing_test.go.

const biasName = "clickd.bias"

// XXH3 is XXH3-64 of data with a 64-bit seed.
func XXH3(data []byte, seed uint64) uint64 { return xxh3.HashSeed(data, seed) }

// NamespaceHash is the hash of a namespace's name, the seed of its features' keys.
func NamespaceHash(name string, seed uint64) uint64 { return xxh3.HashStringSeed(name, seed) }

// NamedKey is the key of a feature named by a string in the namespace hashed ns.
func NamedKey(ns uint64, name string) uint64 { return xxh3.HashStringSeed(name, ns) }

// IDKey is the key of a pre-hashed 64-bit id (still mixed with its namespace).
func IDKey(ns uint64, id uint64) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], id)
	return xxh3.HashSeed(b[:], ns)
}

// BiasKey is the key of the constant bias feature.
func BiasKey(seed uint64) uint64 { return xxh3.HashStringSeed(biasName, seed) }

// CrossKey is the key of a cross of 2 or 3 unfolded keys; it panics on
// another count, a programming error.
func CrossKey(seed uint64, keys ...uint64) uint64 {
	if len(keys) < 2 || len(keys) > 3 {
		panic(fmt.Sprintf("clickd: a cross has 2 or 3 keys, not %d", len(keys)))
	}
	var b [24]byte
	for i, k := range keys {
		binary.LittleEndian.PutUint64(b[8*i:], k)
	}
	return xxh3.HashSeed(b[:8*len(keys)], seed)
}

// Fold folds a key into 2^bits slots (bits 0: unchanged).
func Fold(key uint64, bits uint32) uint64 {
	if bits == 0 {
		return key
	}
	return key & (uint64(1)<<bits - 1)
}

// saturate keeps a float32 result finite, as the server does (±FLT_MAX).
func saturate(x float32) float32 {
	if x > math.MaxFloat32 {
		return math.MaxFloat32
	}
	if x < -math.MaxFloat32 {
		return -math.MaxFloat32
	}
	return x
}

// Hasher is the server's FeatureHasher for one model's hashing config.
// Immutable, so safe to share between goroutines.
type Hasher struct {
	Seed         uint64
	Bits         uint32
	Bias         bool
	Interactions [][]string
}

// HasherFromConfig is the hasher of a model's config (GetModel's
// ModelInfo.Config).
func HasherFromConfig(config *pb.ModelConfig) Hasher {
	h := config.GetHashing()
	out := Hasher{Seed: h.GetSeed(), Bits: h.GetBits(), Bias: h.Bias == nil || h.GetBias()}
	for _, i := range h.GetInteractions() {
		out.Interactions = append(out.Interactions, append([]string(nil), i.GetNamespaces()...))
	}
	return out
}

type keyValue struct {
	key   uint64
	value float32
}

// Hash returns {key: value} for an example made of a context and a
// candidate (either may be empty): exactly the coordinates the server
// learns or scores. Features of value 0 are dropped; crosses cross the
// unfolded keys of the namespaces each interaction names (pooled in order
// of appearance; adjacent equal names cross strictly increasing positions);
// the bias is added; keys are folded; repeated keys merge by float32
// addition, saturating at ±FLT_MAX.
func (h Hasher) Hash(context, candidate Example) map[uint64]float32 {
	var plain []keyValue
	pooled := map[string][]keyValue{}
	for _, ex := range []Example{context, candidate} {
		for _, ns := range ex {
			nsHash := NamespaceHash(ns.Name, h.Seed)
			for _, f := range ns.Features {
				if f.Value == 0 {
					continue
				}
				var k uint64
				if f.IsID {
					k = IDKey(nsHash, f.ID)
				} else {
					k = NamedKey(nsHash, f.Name)
				}
				plain = append(plain, keyValue{k, f.Value})
				pooled[ns.Name] = append(pooled[ns.Name], keyValue{k, f.Value})
			}
		}
	}
	for _, names := range h.Interactions {
		plain = append(plain, h.crosses(names, pooled)...)
	}
	if h.Bias {
		plain = append(plain, keyValue{BiasKey(h.Seed), 1})
	}
	out := make(map[uint64]float32, len(plain))
	for _, kv := range plain {
		k := Fold(kv.key, h.Bits)
		if v, ok := out[k]; ok {
			out[k] = saturate(v + kv.value)
		} else {
			out[k] = kv.value
		}
	}
	return out
}

func (h Hasher) crosses(names []string, pooled map[string][]keyValue) []keyValue {
	var out []keyValue
	if len(names) < 2 || len(names) > 3 {
		return nil
	}
	terms := make([][]keyValue, len(names))
	for i, n := range names {
		terms[i] = pooled[n]
	}
	start := func(j, prev int) int {
		if names[j] == names[j-1] {
			return prev + 1
		}
		return 0
	}
	for a, ta := range terms[0] {
		for b := start(1, a); b < len(terms[1]); b++ {
			tb := terms[1][b]
			ab := saturate(ta.value * tb.value)
			if len(names) == 2 {
				out = append(out, keyValue{CrossKey(h.Seed, ta.key, tb.key), ab})
				continue
			}
			for c := start(2, b); c < len(terms[2]); c++ {
				tc := terms[2][c]
				out = append(out, keyValue{CrossKey(h.Seed, ta.key, tb.key, tc.key), saturate(ab * tc.value)})
			}
		}
	}
	return out
}
