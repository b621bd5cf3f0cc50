// A clickd.v1.Example to core's Example, with the checks that belong to the
// wire format: sizes against ExampleLimits, names' lengths, every feature
// keyed, values finite and bounded (core/optim/numeric_bounds.h), packed
// values as many as what they value. A namespace's features come in four
// forms (Feature messages, packed names, packed ids, packed keys the client
// hashed; docs/api.md "Wire forms"), read in that order and checked alike. Dense
// values are bounded in total here and checked against the model's dense
// namespaces later (CheckDenseValues, core/model/serving.h).
//
// Every error names the field path, e.g. "candidates[3].namespaces[0]
// .features[2].value is nan; must be finite". The path is formatted only
// when there is an error to name: a valid example costs no string work.
//
// Pure functions.
#ifndef CLICKD_WIRE_EXAMPLE_PROTO_H_
#define CLICKD_WIRE_EXAMPLE_PROTO_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "clickd/v1/clickd.pb.h"
#include "core/features/example.h"

namespace clickd {

// The limits on one example. The server sets them by flags (server/limits.h,
// whose Limits extends this struct with the per-request limits).
struct ExampleLimits {
  size_t max_features_per_example = 4096;  // per context, candidate or example
  size_t max_namespaces_per_example = 256;
  size_t max_name_bytes = 1024;  // namespace and feature names
};

// The path of an example in its request ("candidates[3]"), formatted only
// when an error names it.
using FieldPath = absl::FunctionRef<std::string()>;

// What is done with each part of an example as CheckExample reads it:
// ToExample copies it into an Example, HashPredictRequest hashes it
// straight from the message (wire/predict_request.h).
class ExampleSink {
 public:
  // A namespace (its name checked) starts; its features follow.
  virtual void StartNamespace(const v1::Namespace& ns) = 0;
  // A checked feature with its value (1 if unset), whatever its form: a
  // name, an id (to mix with the namespace), or a key the client hashed.
  virtual void AddNamed(const std::string& name, float value) = 0;
  virtual void AddId(uint64_t id, float value) = 0;
  virtual void AddKey(uint64_t key, float value) = 0;
  // A packed list of client-hashed keys without key_values: every value is
  // 1, so nothing per key needs checking. One call per namespace lets a sink
  // take the list in one loop (the hasher's collector does).
  virtual void AddUnitKeys(absl::Span<const uint64_t> keys) {
    for (uint64_t key : keys) AddKey(key, 1.0f);
  }

 protected:
  ~ExampleSink() = default;
};

// The namespace's features in all forms: what max_features_per_example
// counts. A packed value list longer than its keys counts by its length,
// so that an oversized list is refused before anything reads it.
size_t FeatureEntries(const v1::Namespace& ns);
// The namespace's features that hashing will keep (a value of 0 drops one;
// an unset value is 1), in all forms: what the request's cost counts
// (server/request_cost.h). Values beyond their keys count too.
uint64_t NonzeroFeatures(const v1::Namespace& ns);

// Checks one example, in this order: its sizes, then each namespace's name
// and each of its features (handed to `sink` once checked), then its dense
// values (copied into dense->dense). Returns the first error, naming its
// path; nothing after it reaches the sink.
absl::Status CheckExample(const v1::Example& proto, FieldPath field, const ExampleLimits& limits,
                          ExampleSink* sink, Example* dense);

// Converts one example; `field` is its path for error messages.
absl::StatusOr<Example> ToExample(const v1::Example& proto, FieldPath field,
                                  const ExampleLimits& limits);
absl::StatusOr<Example> ToExample(const v1::Example& proto, std::string_view field,
                                  const ExampleLimits& limits);

// The proto form of a parsed example (a replay line, a Kafka record): its
// sparse namespaces, label and importance (1 is left unset).
void LabeledExampleToProto(const LabeledExample& example, v1::LabeledExample* out);

}  // namespace clickd

#endif  // CLICKD_WIRE_EXAMPLE_PROTO_H_
