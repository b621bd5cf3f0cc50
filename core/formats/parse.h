// Line parsers for the replay input formats: LIBSVM, Vowpal Wabbit text and
// Criteo TSV. Pure functions; see docs/input_formats.md for what each format
// accepts and how its fields become namespaces and features.
#ifndef CLICKD_CORE_FORMATS_PARSE_H_
#define CLICKD_CORE_FORMATS_PARSE_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/features/example.h"

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

}  // namespace clickd

#endif  // CLICKD_CORE_FORMATS_PARSE_H_
