package clickd_test

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"

	clickd "github.com/clickd/clickd/client/go"
)

type goldenPart struct {
	Namespace string  `json:"namespace"`
	Name      *string `json:"name"`
	ID        *uint64 `json:"id"`
}

type goldenRow struct {
	Seed  uint64       `json:"seed"`
	Kind  string       `json:"kind"`
	Input string       `json:"input"`
	Bits  uint32       `json:"bits"`
	Parts []goldenPart `json:"parts"`
	Key   string       `json:"key"`
	goldenPart
}

func (p goldenPart) key(seed uint64) uint64 {
	ns := clickd.NamespaceHash(p.Namespace, seed)
	if p.ID != nil {
		return clickd.IDKey(ns, *p.ID)
	}
	return clickd.NamedKey(ns, *p.Name)
}

// TestGoldenVectors checks tests/data/hashing_golden.json, the vectors the
// C++, Python and Java tests read too.
func TestGoldenVectors(t *testing.T) {
	var doc struct {
		Vectors []goldenRow `json:"vectors"`
	}
	raw := must(os.ReadFile("../../tests/data/hashing_golden.json"))
	noErr(t, json.Unmarshal(raw, &doc))
	if len(doc.Vectors) < 15 {
		t.Fatalf("%d vectors", len(doc.Vectors))
	}
	for _, r := range doc.Vectors {
		var got uint64
		switch r.Kind {
		case "xxh3":
			got = clickd.XXH3([]byte(r.Input), r.Seed)
		case "namespace":
			got = clickd.NamespaceHash(r.Namespace, r.Seed)
		case "feature":
			got = clickd.Fold(r.goldenPart.key(r.Seed), r.Bits)
		case "bias":
			got = clickd.BiasKey(r.Seed)
		case "cross":
			keys := make([]uint64, len(r.Parts))
			for i, p := range r.Parts {
				keys[i] = p.key(r.Seed)
			}
			got = clickd.CrossKey(r.Seed, keys...)
		default:
			t.Fatalf("unknown kind %q", r.Kind)
		}
		want := must(strconv.ParseUint(r.Key, 16, 64))
		if got != want {
			t.Errorf("%+v: got %016x, want %016x", r, got, want)
		}
	}
}

func TestHasherRules(t *testing.T) {
	h := clickd.Hasher{Seed: 0, Bias: true, Interactions: [][]string{{"user", "ad"}}}
	keys := h.Hash(clickd.Example{clickd.NS("user", clickd.Name("country=FR"))}, clickd.Example{clickd.NS("ad", clickd.Name("campaign=7"))})
	want := map[uint64]float32{0x4E7766629EAD153D: 1, 0xD5A62F69DD533E23: 1, 0xEC2EA4DE06D3DA4E: 1, 0x0D3C7B1005D35E2E: 1}
	if len(keys) != len(want) {
		t.Fatalf("keys %v", keys)
	}
	for k, v := range want {
		if keys[k] != v {
			t.Fatalf("key %016x: %v, want %v", k, keys[k], v)
		}
	}
	folded := clickd.Hasher{Bits: 18}.Hash(clickd.Example{clickd.NS("user", clickd.Name("country=FR"))}, nil)
	if len(folded) != 1 || folded[0x1153D] != 1 {
		t.Fatalf("folded %v", folded)
	}
	// Zero values drop, crosses multiply, repeats merge and saturate.
	vals := clickd.Hasher{Interactions: [][]string{{"a", "b"}}}.Hash(clickd.Example{
		clickd.NS("a", clickd.NameValue("x", 0.5), clickd.NameValue("zero", 0), clickd.NameValue("big", 3e38), clickd.NameValue("big", 3e38)),
		clickd.NS("b", clickd.NameValue("y", 3)),
	}, nil)
	ns := clickd.NamespaceHash("a", 0)
	x, y := clickd.NamedKey(ns, "x"), clickd.NamedKey(clickd.NamespaceHash("b", 0), "y")
	if vals[clickd.CrossKey(0, x, y)] != 1.5 {
		t.Fatalf("cross value %v", vals[clickd.CrossKey(0, x, y)])
	}
	if _, ok := vals[clickd.NamedKey(ns, "zero")]; ok {
		t.Fatal("a zero feature was kept")
	}
	if vals[clickd.NamedKey(ns, "big")] != 3.4028234663852886e38 {
		t.Fatalf("merged value %v does not saturate", vals[clickd.NamedKey(ns, "big")])
	}
}
