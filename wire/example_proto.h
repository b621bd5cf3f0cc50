// A clickd.v1.Example to core's Example, with the checks that belong to the
// wire format: sizes against ExampleLimits, names' lengths, every feature
// keyed, values finite and bounded (core/optim/numeric_bounds.h). Dense
// values are bounded in total here and checked against the model's dense
// namespaces later (CheckDenseValues, core/model/serving.h).
//
// Every error names the field path, e.g. "candidates[3].namespaces[0]
// .features[2].value is nan; must be finite".
//
// Pure functions.
#ifndef CLICKD_WIRE_EXAMPLE_PROTO_H_
#define CLICKD_WIRE_EXAMPLE_PROTO_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
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

// Converts one example; `field` is its path for error messages.
absl::StatusOr<Example> ToExample(const v1::Example& proto, const std::string& field,
                                  const ExampleLimits& limits);

}  // namespace clickd

#endif  // CLICKD_WIRE_EXAMPLE_PROTO_H_
