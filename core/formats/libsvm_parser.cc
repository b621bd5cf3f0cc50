// The LIBSVM line parser behind ParseLine (parse.h):
//   label [qid:N] idx:value ... [# comment]
// docs/input_formats.md says what it accepts.
#include <cstdint>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "core/formats/parse_helpers.h"

namespace clickd {
namespace formats_internal {
namespace {

absl::Status LibsvmFeatureError(int position, std::string_view token, std::string_view reason) {
  return absl::InvalidArgumentError(
      absl::StrCat("feature ", position, " \"", AbslView(token), "\": ", AbslView(reason)));
}

absl::Status AddLibsvmFeature(int position, std::string_view token, ExampleBuilder& builder) {
  const size_t colon = token.find(':');
  if (colon == std::string_view::npos) {
    return LibsvmFeatureError(position, token, "expected index:value");
  }
  uint64_t index = 0;
  if (!ParseInteger(token.substr(0, colon), &index)) {
    return LibsvmFeatureError(position, token, "index is not an unsigned 64-bit integer");
  }
  const ParsedFloat value = ParseFloat(token.substr(colon + 1));
  if (value.status != NumberStatus::kOk) {
    return LibsvmFeatureError(position, token,
                              absl::StrCat("value ", AbslView(Describe(value.status))));
  }
  builder.AddId(index, value.value);
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseLibsvm(std::string_view line, LabeledExample* out) {
  Tokenizer tokens(line.substr(0, line.find('#')));
  const std::string_view label_token = tokens.Next();
  if (label_token.empty()) return absl::InvalidArgumentError("missing label");
  absl::StatusOr<float> label = ParseNumberField("label", label_token);
  if (!label.ok()) return label.status();
  out->label = *label;

  ExampleBuilder builder(out);
  builder.StartNamespace("");
  std::string_view token = tokens.Next();
  if (token.substr(0, 4) == "qid:") token = tokens.Next();
  for (int position = 1; !token.empty(); ++position, token = tokens.Next()) {
    absl::Status status = AddLibsvmFeature(position, token, builder);
    if (!status.ok()) return status;
  }
  builder.Finish();
  return absl::OkStatus();
}

}  // namespace formats_internal
}  // namespace clickd
