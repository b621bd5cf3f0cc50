// The public entry points of parse.h: format names and ParseLine, which
// hands each line to its format's parser (libsvm_parser.cc, vw_parser.cc,
// criteo_parser.cc; shared helpers in parse_helpers.{h,cc}).
#include "core/formats/parse.h"

#include <string_view>

#include "absl/strings/str_cat.h"
#include "core/formats/parse_helpers.h"

namespace clickd {

using formats_internal::AbslView;

absl::StatusOr<InputFormat> ParseInputFormat(std::string_view name) {
  if (name == "libsvm") return InputFormat::kLibsvm;
  if (name == "vw") return InputFormat::kVw;
  if (name == "criteo") return InputFormat::kCriteo;
  return absl::InvalidArgumentError(absl::StrCat("input format \"", AbslView(name),
                                                 "\" is unknown; expected libsvm, vw or criteo"));
}

std::string_view InputFormatName(InputFormat format) {
  switch (format) {
    case InputFormat::kLibsvm:
      return "libsvm";
    case InputFormat::kVw:
      return "vw";
    case InputFormat::kCriteo:
      return "criteo";
  }
  return "unknown";
}

absl::Status ParseLine(InputFormat format, std::string_view line, LabeledExample* out) {
  out->label = 0.0f;
  out->importance = 1.0f;
  switch (format) {
    case InputFormat::kLibsvm:
      return formats_internal::ParseLibsvm(line, out);
    case InputFormat::kVw:
      return formats_internal::ParseVw(line, out);
    case InputFormat::kCriteo:
      return formats_internal::ParseCriteo(line, out);
  }
  return absl::InvalidArgumentError("unknown input format");
}

absl::Status ParseLineHashed(InputFormat format, std::string_view line, const FeatureHasher& hasher,
                             HashedLine* out) {
  out->label = 0.0f;
  out->importance = 1.0f;
  if (format == InputFormat::kVw) {
    return formats_internal::ParseVwHashed(line, hasher, &out->hashed, &out->label,
                                           &out->importance);
  }
  absl::Status status = ParseLine(format, line, &out->scratch);
  if (!status.ok()) return status;
  out->hashed.features.clear();
  hasher.Hash(out->scratch.example, &out->hashed.features);
  out->label = out->scratch.label;
  out->importance = out->scratch.importance;
  return absl::OkStatus();
}

}  // namespace clickd
