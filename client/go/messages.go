package clickd

import (
	pb "github.com/clickd/clickd/client/go/clickdpb"
)

// Feature is one feature: a name, or a pre-hashed 64-bit id (IsID), and its
// value (0 drops it at the server; Name and ID give value 1).
type Feature struct {
	Name  string
	ID    uint64
	IsID  bool
	Value float32
}

// Name is a feature named by a string, value 1.
func Name(name string) Feature { return Feature{Name: name, Value: 1} }

// NameValue is a named feature with a value.
func NameValue(name string, value float32) Feature { return Feature{Name: name, Value: value} }

// ID is a pre-hashed feature id, value 1.
func ID(id uint64) Feature { return Feature{ID: id, IsID: true, Value: 1} }

// IDValue is a pre-hashed feature id with a value.
func IDValue(id uint64, value float32) Feature { return Feature{ID: id, IsID: true, Value: value} }

// Namespace is a namespace's features.
type Namespace struct {
	Name     string
	Features []Feature
}

// NS builds a Namespace.
func NS(name string, features ...Feature) Namespace {
	return Namespace{Name: name, Features: features}
}

// Example is a list of namespaces (a name may repeat: its features pool).
type Example []Namespace

// Wire is the form an Example takes on the wire (docs/api.md, "Wire forms").
// Every form teaches the same coordinates.
type Wire int

const (
	// WireFeatures: one Feature message per feature.
	WireFeatures Wire = iota
	// WirePacked: each namespace's names and ids as packed lists.
	WirePacked
	// WireKeys: hashed here into packed unfolded keys with the model's
	// hashing seed, so the server neither parses nor hashes names (a
	// 100-candidate Predict costs the server about a quarter of the work).
	WireKeys
)

// Proto writes the example in a wire form; seed is the model's
// hashing.seed, used by WireKeys only.
func (e Example) Proto(wire Wire, seed uint64) *pb.Example {
	out := &pb.Example{Namespaces: make([]*pb.Namespace, 0, len(e))}
	for _, ns := range e {
		out.Namespaces = append(out.Namespaces, ns.proto(wire, seed))
	}
	return out
}

func (n Namespace) proto(wire Wire, seed uint64) *pb.Namespace {
	out := &pb.Namespace{Name: n.Name}
	switch wire {
	case WirePacked:
		// Values are sent only when some differ from 1: an empty list means
		// every value is 1. Names and ids are separate lists, each with its own.
		var names, ids []Feature
		for _, f := range n.Features {
			if f.IsID {
				ids = append(ids, f)
			} else {
				names = append(names, f)
			}
		}
		for _, f := range names {
			out.Names = append(out.Names, f.Name)
		}
		out.Values = packedValues(names)
		for _, f := range ids {
			out.Ids = append(out.Ids, f.ID)
		}
		out.IdValues = packedValues(ids)
	case WireKeys:
		ns := NamespaceHash(n.Name, seed)
		out.Keys = make([]uint64, 0, len(n.Features))
		for _, f := range n.Features {
			if f.IsID {
				out.Keys = append(out.Keys, IDKey(ns, f.ID))
			} else {
				out.Keys = append(out.Keys, NamedKey(ns, f.Name))
			}
		}
		out.KeyValues = packedValues(n.Features)
	default:
		out.Features = make([]*pb.Feature, 0, len(n.Features))
		for _, f := range n.Features {
			pf := &pb.Feature{}
			if f.IsID {
				pf.Key = &pb.Feature_Id{Id: f.ID}
			} else {
				pf.Key = &pb.Feature_Name{Name: f.Name}
			}
			if f.Value != 1 {
				v := f.Value
				pf.Value = &v
			}
			out.Features = append(out.Features, pf)
		}
	}
	return out
}

func packedValues(fs []Feature) []float32 {
	all1 := true
	for _, f := range fs {
		if f.Value != 1 {
			all1 = false
			break
		}
	}
	if all1 {
		return nil
	}
	out := make([]float32, len(fs))
	for i, f := range fs {
		out[i] = f.Value
	}
	return out
}

// Labeled is an example with its label and importance (0: unset, which the
// server reads as 1).
type Labeled struct {
	Example    Example
	Label      float32
	Importance float32
}

// Candidate is a shown candidate with its label, in an Impression.
type Candidate = Labeled

// Impression is a shown page: a shared context and its labeled candidates.
type Impression struct {
	Context    Example
	Candidates []Labeled
}

func (l Labeled) proto(wire Wire, seed uint64) *pb.LabeledExample {
	out := &pb.LabeledExample{Example: l.Example.Proto(wire, seed), Label: l.Label}
	if l.Importance != 0 {
		imp := l.Importance
		out.Importance = &imp
	}
	return out
}

// PredictArgs is a Predict, built into its message by Proto.
type PredictArgs struct {
	Model      string
	Context    Example
	Candidates []Example
	// Wire and Seed (the model's hashing.seed, for WireKeys) choose the form.
	Wire Wire
	Seed uint64
	// LogImpressions remembers every candidate for Feedback (never retried).
	LogImpressions  bool
	Uncertainty     bool
	ExplainTopK     uint32
	Variant         string
	MinModelVersion uint64
	RequestID       string
}

// Proto is the PredictRequest.
func (a PredictArgs) Proto() *pb.PredictRequest {
	out := &pb.PredictRequest{
		Model: a.Model, RequestId: a.RequestID, MinModelVersion: a.MinModelVersion,
		Variant: a.Variant, LogImpressions: a.LogImpressions, Uncertainty: a.Uncertainty,
		ExplainTopK: a.ExplainTopK,
	}
	if len(a.Context) > 0 {
		out.Context = a.Context.Proto(a.Wire, a.Seed)
	}
	out.Candidates = make([]*pb.Example, len(a.Candidates))
	for i, c := range a.Candidates {
		out.Candidates[i] = c.Proto(a.Wire, a.Seed)
	}
	return out
}

// UpdateArgs is an Update, built into its message by Proto.
type UpdateArgs struct {
	Model          string
	Examples       []Labeled
	Impressions    []Impression
	Wire           Wire
	Seed           uint64
	ReturnMargins  bool
	IdempotencyKey string
	RequestID      string
}

// Proto is the UpdateRequest.
func (a UpdateArgs) Proto() *pb.UpdateRequest {
	out := &pb.UpdateRequest{
		Model: a.Model, RequestId: a.RequestID, ReturnMargins: a.ReturnMargins,
		IdempotencyKey: a.IdempotencyKey,
	}
	for _, l := range a.Examples {
		out.Examples = append(out.Examples, l.proto(a.Wire, a.Seed))
	}
	for _, imp := range a.Impressions {
		pi := &pb.Impression{Context: imp.Context.Proto(a.Wire, a.Seed)}
		for _, c := range imp.Candidates {
			pi.Candidates = append(pi.Candidates, c.proto(a.Wire, a.Seed))
		}
		out.Impressions = append(out.Impressions, pi)
	}
	return out
}

// Click is one Feedback item: an impression's label (1 click, 0 not),
// importance (0: unset, read as 1) and when it happened (microseconds since
// the Unix epoch; 0: when the server receives it).
type Click struct {
	ImpressionID    uint64
	Label           float32
	Importance      float32
	EventTimeMicros int64
}

// FeedbackArgs is a Feedback, built into its message by Proto.
type FeedbackArgs struct {
	Model          string
	Items          []Click
	IdempotencyKey string
	RequestID      string
}

// Proto is the FeedbackRequest.
func (a FeedbackArgs) Proto() *pb.FeedbackRequest {
	out := &pb.FeedbackRequest{Model: a.Model, RequestId: a.RequestID, IdempotencyKey: a.IdempotencyKey}
	for _, c := range a.Items {
		item := &pb.FeedbackItem{ImpressionId: c.ImpressionID, Label: c.Label,
			EventTimeUnixMicros: c.EventTimeMicros}
		if c.Importance != 0 {
			imp := c.Importance
			item.Importance = &imp
		}
		out.Items = append(out.Items, item)
	}
	return out
}
