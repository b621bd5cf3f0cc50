// The Vowpal Wabbit text line parser behind ParseLine (parse.h):
//   label [importance] ['tag]|ns[:scale] feat[:value] ...
// docs/input_formats.md says what it accepts.
#include <algorithm>
#include <cmath>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "core/formats/parse_helpers.h"

namespace clickd {
namespace formats_internal {
namespace {

// Parses the text before the first '|' into *label and *importance.
absl::Status ParseVwLabelSection(std::string_view section, float* label_out,
                                 float* importance_out) {
  Tokenizer tokens(section);
  const std::string_view label_token = tokens.Next();
  // A leading tag is how unlabelled VW examples look; replay needs labels.
  if (label_token.empty() || label_token[0] == '\'') {
    return absl::InvalidArgumentError("missing label");
  }
  absl::StatusOr<float> label = ParseNumberField("label", label_token);
  if (!label.ok()) return label.status();
  *label_out = *label;

  bool seen_importance = false;
  bool seen_tag = false;
  for (std::string_view token = tokens.Next(); !token.empty(); token = tokens.Next()) {
    const ParsedFloat number = ParseFloat(token);
    const bool is_tag = token[0] == '\'' || number.status == NumberStatus::kNotANumber;
    if (seen_tag || (!is_tag && seen_importance)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected \"", AbslView(token),
                       "\" in the label section; expected label [importance] [tag]"));
    }
    if (is_tag) {
      seen_tag = true;
      continue;
    }
    if (number.status != NumberStatus::kOk) {
      return absl::InvalidArgumentError(
          absl::StrCat("importance \"", AbslView(token), "\" ", AbslView(Describe(number.status))));
    }
    if (number.value < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("importance \"", AbslView(token), "\" is negative"));
    }
    *importance_out = number.value;
    seen_importance = true;
  }
  return absl::OkStatus();
}

absl::Status VwFeatureError(std::string_view ns, int position, std::string_view token,
                            std::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat("namespace \"", AbslView(ns), "\" feature ",
                                                 position, " \"", AbslView(token),
                                                 "\": ", AbslView(reason)));
}

// Builder: ExampleBuilder (names copied into an Example) or HashingBuilder
// (names hashed where they lie in the line). `colon`: the position of the
// token's first ':' (npos if none), found by the scan that found its end.
template <typename Builder>
absl::Status AddVwFeature(std::string_view ns, float scale, int position, std::string_view token,
                          size_t colon, Builder& builder) {
  // Split at the first ':' as Vowpal Wabbit does, so "a:b:1" is an error.
  const std::string_view name = token.substr(0, colon);
  if (name.empty()) return VwFeatureError(ns, position, token, "empty name");
  float value = 1.0f;
  if (colon != std::string_view::npos) {
    const ParsedFloat parsed = ParseFloat(token.substr(colon + 1));
    if (parsed.status != NumberStatus::kOk) {
      return VwFeatureError(ns, position, token,
                            absl::StrCat("value ", AbslView(Describe(parsed.status))));
    }
    value = parsed.value;
  }
  value *= scale;
  if (!std::isfinite(value)) {
    return VwFeatureError(ns, position, token, "value times the namespace scale is not finite");
  }
  builder.AddNamed(name, value);
  return absl::OkStatus();
}

bool EndsToken(char c) { return Tokenizer::IsSpace(c) || c == '|'; }

// Parses one namespace, "ns[:scale] feat[:value] ...", from the start of
// `rest` (the text after a '|') up to the next '|' or the end; returns in
// *end where it stopped. One pass over the bytes: each token's end, its
// first ':' and the next '|' are found by the same loop (a search per token
// and per namespace, each a memchr call, cost more than the bytes they read).
template <typename Builder>
absl::Status ParseVwNamespace(std::string_view rest, Builder& builder, size_t* end) {
  const char* const begin = rest.data();
  const char* const stop = begin + rest.size();
  const char* p = begin;
  while (p < stop && !EndsToken(*p)) ++p;
  const std::string_view header(begin, static_cast<size_t>(p - begin));
  const size_t colon = header.find(':');
  const std::string_view name = header.substr(0, colon);
  float scale = 1.0f;
  if (colon != std::string_view::npos) {
    const ParsedFloat parsed = ParseFloat(header.substr(colon + 1));
    if (parsed.status != NumberStatus::kOk) {
      return absl::InvalidArgumentError(absl::StrCat("namespace \"", AbslView(header), "\": scale ",
                                                     AbslView(Describe(parsed.status))));
    }
    scale = parsed.value;
  }
  builder.StartNamespace(name);
  int position = 1;
  while (true) {
    while (p < stop && Tokenizer::IsSpace(*p)) ++p;
    if (p == stop || *p == '|') break;
    const char* const token = p;
    size_t token_colon = std::string_view::npos;
    for (; p < stop && !EndsToken(*p); ++p) {
      if (*p == ':' && token_colon == std::string_view::npos) {
        token_colon = static_cast<size_t>(p - token);
      }
    }
    absl::Status status =
        AddVwFeature(name, scale, position++,
                     std::string_view(token, static_cast<size_t>(p - token)), token_colon, builder);
    if (!status.ok()) return status;
  }
  *end = static_cast<size_t>(p - begin);
  return absl::OkStatus();
}

template <typename Builder>
absl::Status ParseVwInto(std::string_view line, float* label, float* importance, Builder& builder) {
  const size_t bar = line.find('|');
  if (bar == std::string_view::npos) {
    // Without this check a LIBSVM line would pass as a label and a tag.
    return absl::InvalidArgumentError("missing '|': expected at least one namespace");
  }
  absl::Status status = ParseVwLabelSection(line.substr(0, bar), label, importance);
  if (!status.ok()) return status;

  std::string_view rest = line.substr(bar + 1);
  while (true) {
    size_t end = 0;  // the next '|', or rest's end
    status = ParseVwNamespace(rest, builder, &end);
    if (!status.ok()) return status;
    if (end == rest.size()) break;
    rest.remove_prefix(end + 1);
  }
  builder.Finish();
  return absl::OkStatus();
}

// The builder ParseVwHashed parses into: a FeatureHasher::Collector.
class HashingBuilder {
 public:
  explicit HashingBuilder(FeatureHasher::Collector& collector) : collector_(collector) {}
  void StartNamespace(std::string_view name) { collector_.StartNamespace(name); }
  void AddNamed(std::string_view name, float value) { collector_.AddNamed(name, value); }
  void Finish() {}

 private:
  FeatureHasher::Collector& collector_;
};

}  // namespace

absl::Status ParseVw(std::string_view line, LabeledExample* out) {
  ExampleBuilder builder(out);
  return ParseVwInto(line, &out->label, &out->importance, builder);
}

absl::Status ParseVwHashed(std::string_view line, const FeatureHasher& hasher, HashedContext* out,
                           float* label, float* importance) {
  out->features.clear();
  FeatureHasher::Collector collector(hasher, &out->features, &out->terms);
  HashingBuilder builder(collector);
  absl::Status status = ParseVwInto(line, label, importance, builder);
  if (!status.ok()) return status;
  hasher.FinishContext(out);
  return absl::OkStatus();
}

}  // namespace formats_internal
}  // namespace clickd
