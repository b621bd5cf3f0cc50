#include "core/formats/parse.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"

namespace clickd {
namespace {

// ---------------------------------------------------------------------------
// Tokens and numbers.

// Converts for absl::StrCat: this Abseil build's string_view is its own type,
// not an alias of std::string_view.
absl::string_view AbslView(std::string_view text) { return {text.data(), text.size()}; }

// Splits text on runs of spaces and tabs without copying it.
class Tokenizer {
 public:
  explicit Tokenizer(std::string_view text) : rest_(text) {}

  // Returns the next token, or an empty view when none is left.
  std::string_view Next() {
    size_t begin = 0;
    while (begin < rest_.size() && IsSpace(rest_[begin])) ++begin;
    size_t end = begin;
    while (end < rest_.size() && !IsSpace(rest_[end])) ++end;
    std::string_view token = rest_.substr(begin, end - begin);
    rest_.remove_prefix(end);
    return token;
  }

  static bool IsSpace(char c) { return c == ' ' || c == '\t'; }

 private:
  std::string_view rest_;
};

enum class NumberStatus { kOk, kNotANumber, kNan, kInf, kOutOfRange };

// Completes a sentence such as `label "x" ...` or `value ...`.
std::string_view Describe(NumberStatus status) {
  switch (status) {
    case NumberStatus::kOk:
      return "is ok";
    case NumberStatus::kNotANumber:
      return "is not a number";
    case NumberStatus::kNan:
      return "is nan; must be finite";
    case NumberStatus::kInf:
      return "is inf; must be finite";
    case NumberStatus::kOutOfRange:
      return "is out of range for a float";
  }
  return "is invalid";
}

struct ParsedFloat {
  float value = 0.0f;
  NumberStatus status = NumberStatus::kNotANumber;
};

// Parses a whole token as a finite float. std::from_chars neither allocates
// nor depends on the locale; it rejects a leading '+', which LIBSVM files
// use for labels ("+1"), so one is skipped here. It does accept "nan" and
// "inf", which is why finiteness is checked after it.
ParsedFloat ParseFloat(std::string_view text) {
  if (text.size() > 1 && text[0] == '+' && text[1] != '-' && text[1] != '+') {
    text.remove_prefix(1);
  }
  double value = 0.0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ptr != end || text.empty()) return {0.0f, NumberStatus::kNotANumber};
  if (ec == std::errc::result_out_of_range) return {0.0f, NumberStatus::kOutOfRange};
  if (ec != std::errc()) return {0.0f, NumberStatus::kNotANumber};
  if (std::isnan(value)) return {0.0f, NumberStatus::kNan};
  if (std::isinf(value)) return {0.0f, NumberStatus::kInf};
  // Parsed as a double so that 1e-50 rounds to 0 instead of failing.
  if (std::fabs(value) > std::numeric_limits<float>::max()) {
    return {0.0f, NumberStatus::kOutOfRange};
  }
  return {static_cast<float>(value), NumberStatus::kOk};
}

// Parses a whole token as an integer; false if it is not one or overflows.
template <typename Int>
bool ParseInteger(std::string_view text, Int* value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && !text.empty();
}

// Parses a numeric field that stands alone, such as a label; errors read
// `label "x" is not a number`.
absl::StatusOr<float> ParseNumberField(std::string_view what, std::string_view token) {
  const ParsedFloat parsed = ParseFloat(token);
  if (parsed.status == NumberStatus::kOk) return parsed.value;
  return absl::InvalidArgumentError(absl::StrCat(AbslView(what), " \"", AbslView(token), "\" ",
                                                 AbslView(Describe(parsed.status))));
}

// ---------------------------------------------------------------------------
// Building the example in place.

// Fills a LabeledExample's namespaces, reusing the Namespace and Feature
// objects (and their strings' capacity) that the previous line left there,
// so that a stream of similar lines allocates next to nothing.
class ExampleBuilder {
 public:
  explicit ExampleBuilder(LabeledExample* out) : namespaces_(&out->example.namespaces) {}

  void StartNamespace(std::string_view name) {
    TrimFeatures();
    if (used_namespaces_ == namespaces_->size()) namespaces_->emplace_back();
    Namespace& ns = (*namespaces_)[used_namespaces_++];
    ns.name.assign(name);
    used_features_ = 0;
  }

  void AddNamed(std::string_view name, float value) {
    Feature& feature = NextFeature();
    feature.name.assign(name);
    feature.id = 0;
    feature.has_id = false;
    feature.value = value;
  }

  void AddId(uint64_t id, float value) {
    Feature& feature = NextFeature();
    feature.name.clear();
    feature.id = id;
    feature.has_id = true;
    feature.value = value;
  }

  // Drops whatever the previous line left beyond what this line used.
  void Finish() {
    TrimFeatures();
    namespaces_->resize(used_namespaces_);
  }

 private:
  Feature& NextFeature() {
    std::vector<Feature>& features = (*namespaces_)[used_namespaces_ - 1].features;
    if (used_features_ == features.size()) features.emplace_back();
    return features[used_features_++];
  }

  void TrimFeatures() {
    if (used_namespaces_ > 0) (*namespaces_)[used_namespaces_ - 1].features.resize(used_features_);
  }

  std::vector<Namespace>* namespaces_;
  size_t used_namespaces_ = 0;
  size_t used_features_ = 0;
};

// ---------------------------------------------------------------------------
// LIBSVM: label [qid:N] idx:value ... [# comment]

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

// ---------------------------------------------------------------------------
// Vowpal Wabbit text: label [importance] ['tag]|ns[:scale] feat[:value] ...

// Parses the text before the first '|'.
absl::Status ParseVwLabelSection(std::string_view section, LabeledExample* out) {
  Tokenizer tokens(section);
  const std::string_view label_token = tokens.Next();
  // A leading tag is how unlabelled VW examples look; replay needs labels.
  if (label_token.empty() || label_token[0] == '\'') {
    return absl::InvalidArgumentError("missing label");
  }
  absl::StatusOr<float> label = ParseNumberField("label", label_token);
  if (!label.ok()) return label.status();
  out->label = *label;

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
    out->importance = number.value;
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

absl::Status AddVwFeature(std::string_view ns, float scale, int position, std::string_view token,
                          ExampleBuilder& builder) {
  // Split at the first ':' as Vowpal Wabbit does, so "a:b:1" is an error.
  const size_t colon = token.find(':');
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

// Parses the text after one '|': "ns[:scale] feat[:value] ...".
absl::Status ParseVwNamespace(std::string_view segment, ExampleBuilder& builder) {
  const size_t header_end = std::min(segment.find_first_of(" \t"), segment.size());
  const std::string_view header = segment.substr(0, header_end);
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
  Tokenizer tokens(segment.substr(header_end));
  int position = 1;
  for (std::string_view token = tokens.Next(); !token.empty(); token = tokens.Next()) {
    absl::Status status = AddVwFeature(name, scale, position++, token, builder);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status ParseVw(std::string_view line, LabeledExample* out) {
  const size_t bar = line.find('|');
  if (bar == std::string_view::npos) {
    // Without this check a LIBSVM line would pass as a label and a tag.
    return absl::InvalidArgumentError("missing '|': expected at least one namespace");
  }
  absl::Status status = ParseVwLabelSection(line.substr(0, bar), out);
  if (!status.ok()) return status;

  ExampleBuilder builder(out);
  std::string_view rest = line.substr(bar + 1);
  while (true) {
    const size_t next_bar = rest.find('|');
    status = ParseVwNamespace(rest.substr(0, next_bar), builder);
    if (!status.ok()) return status;
    if (next_bar == std::string_view::npos) break;
    rest.remove_prefix(next_bar + 1);
  }
  builder.Finish();
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Criteo TSV: label, I1..I13, C1..C26.

constexpr int kCriteoIntegers = 13;
constexpr int kCriteoCategoricals = 26;
constexpr int kCriteoFields = 1 + kCriteoIntegers + kCriteoCategoricals;

constexpr std::array<std::string_view, kCriteoIntegers> kIntegerNames = {
    "I1", "I2", "I3", "I4", "I5", "I6", "I7", "I8", "I9", "I10", "I11", "I12", "I13"};
constexpr std::array<std::string_view, kCriteoCategoricals> kCategoricalNames = {
    "C1",  "C2",  "C3",  "C4",  "C5",  "C6",  "C7",  "C8",  "C9",  "C10", "C11", "C12", "C13",
    "C14", "C15", "C16", "C17", "C18", "C19", "C20", "C21", "C22", "C23", "C24", "C25", "C26"};

// The name of an integer's bucket, held inline so that no string is built.
struct BucketName {
  std::array<char, 24> text;
  size_t size;
  std::string_view view() const { return {text.data(), size}; }
};

// Buckets a count as the Criteo-competition winners did: values up to 2
// stay exact, larger ones share a bucket per floor(ln(v)^2), which keeps the
// number of distinct features small while separating orders of magnitude.
BucketName CriteoIntegerBucket(int64_t v) {
  BucketName bucket;
  char* begin = bucket.text.data();
  char* end = begin + bucket.text.size();
  if (v <= 2) {
    bucket.size = std::to_chars(begin, end, v).ptr - begin;
    return bucket;
  }
  const double log_v = std::log(static_cast<double>(v));
  *begin = 'L';
  const auto squared = static_cast<int64_t>(std::floor(log_v * log_v));
  bucket.size = std::to_chars(begin + 1, end, squared).ptr - begin;
  return bucket;
}

// Splits on every tab; returns the true field count even past kCriteoFields.
int SplitCriteoFields(std::string_view line, std::array<std::string_view, kCriteoFields>& fields) {
  int count = 0;
  while (true) {
    const size_t tab = line.find('\t');
    if (count < kCriteoFields) fields[count] = line.substr(0, tab);
    ++count;
    if (tab == std::string_view::npos) return count;
    line.remove_prefix(tab + 1);
  }
}

absl::Status ParseCriteo(std::string_view line, LabeledExample* out) {
  std::array<std::string_view, kCriteoFields> fields;
  const int count = SplitCriteoFields(line, fields);
  if (count != kCriteoFields) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", kCriteoFields, " tab-separated fields, got ", count));
  }
  absl::StatusOr<float> label = ParseNumberField("label", fields[0]);
  if (!label.ok()) return label.status();
  out->label = *label;

  ExampleBuilder builder(out);
  for (int j = 0; j < kCriteoIntegers; ++j) {
    const std::string_view cell = fields[1 + j];
    if (cell.empty()) continue;
    int64_t v = 0;
    if (!ParseInteger(cell, &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(AbslView(kIntegerNames[j]), " is \"", AbslView(cell), "\": not an integer"));
    }
    builder.StartNamespace(kIntegerNames[j]);
    builder.AddNamed(CriteoIntegerBucket(v).view(), 1.0f);
  }
  for (int j = 0; j < kCriteoCategoricals; ++j) {
    const std::string_view cell = fields[1 + kCriteoIntegers + j];
    if (cell.empty()) continue;
    builder.StartNamespace(kCategoricalNames[j]);
    builder.AddNamed(cell, 1.0f);
  }
  builder.Finish();
  return absl::OkStatus();
}

}  // namespace

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
      return ParseLibsvm(line, out);
    case InputFormat::kVw:
      return ParseVw(line, out);
    case InputFormat::kCriteo:
      return ParseCriteo(line, out);
  }
  return absl::InvalidArgumentError("unknown input format");
}

}  // namespace clickd
