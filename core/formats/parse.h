// Line parsers for the replay input formats: LIBSVM, Vowpal Wabbit text and
// Criteo TSV. Pure functions; see docs/input_formats.md for what each format
// accepts and how its fields become namespaces and features.
#ifndef CLICKD_CORE_FORMATS_PARSE_H_
#define CLICKD_CORE_FORMATS_PARSE_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/features/example.h"
#include "core/features/hasher.h"

namespace clickd {

enum class InputFormat { kLibsvm, kVw, kCriteo };

absl::StatusOr<InputFormat> ParseInputFormat(std::string_view name);
std::string_view InputFormatName(InputFormat format);

// Parses one line (without its newline) into *out, replacing its contents
// and reusing its capacity. On a malformed line returns InvalidArgument with
// the reason (the caller adds file and line number) and leaves *out
// unspecified. Labels are parsed as numbers only; whether a label suits the
// loss is checked by the caller.
absl::Status ParseLine(InputFormat format, std::string_view line, LabeledExample* out);

// A line parsed and hashed: what ParseLine then FeatureHasher::Hash give.
struct HashedLine {
  HashedContext hashed;  // hashed.features: the example's features
  float label = 0.0f;
  float importance = 1.0f;
  LabeledExample scratch;  // the parsed example, for formats parsed first
};

// ParseLine and hasher.Hash in one: the features, label and importance of
// the line into *out, with the same errors as ParseLine. A Vowpal Wabbit
// line's names are hashed where they lie in the line, without building an
// Example (the offline replay's reader: docs/performance.md).
absl::Status ParseLineHashed(InputFormat format, std::string_view line, const FeatureHasher& hasher,
                             HashedLine* out);

}  // namespace clickd

#endif  // CLICKD_CORE_FORMATS_PARSE_H_
