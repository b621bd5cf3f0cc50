// What the line parsers of core/formats share: splitting a line into tokens,
// parsing numbers with the error wording every format uses, and filling a
// LabeledExample in place. Internal to core/formats (parse.h is the public
// header). Pure functions; an ExampleBuilder is used by one thread at a time.
#ifndef CLICKD_CORE_FORMATS_PARSE_HELPERS_H_
#define CLICKD_CORE_FORMATS_PARSE_HELPERS_H_

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <system_error>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/features/example.h"
#include "core/features/hasher.h"

namespace clickd {
namespace formats_internal {

// ---------------------------------------------------------------------------
// Tokens and numbers.

// Converts for absl::StrCat: this Abseil build's string_view is its own type,
// not an alias of std::string_view.
inline absl::string_view AbslView(std::string_view text) { return {text.data(), text.size()}; }

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
std::string_view Describe(NumberStatus status);

struct ParsedFloat {
  float value = 0.0f;
  NumberStatus status = NumberStatus::kNotANumber;
};

// Parses a whole token as a finite float. std::from_chars neither allocates
// nor depends on the locale; it rejects a leading '+', which LIBSVM files
// use for labels ("+1"), so one is skipped here. It does accept "nan" and
// "inf", which is why finiteness is checked after it.
ParsedFloat ParseFloat(std::string_view text);

// Parses a whole token as an integer; false if it is not one or overflows.
template <typename Int>
bool ParseInteger(std::string_view text, Int* value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && !text.empty();
}

// Parses a numeric field that stands alone, such as a label; errors read
// `label "x" is not a number`.
absl::StatusOr<float> ParseNumberField(std::string_view what, std::string_view token);

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
// The line parsers, one file each: libsvm_parser.cc, vw_parser.cc,
// criteo_parser.cc. ParseLine (parse.cc) has already reset the label and
// the importance; each sets the label and fills the example.

absl::Status ParseLibsvm(std::string_view line, LabeledExample* out);
absl::Status ParseVw(std::string_view line, LabeledExample* out);
// ParseVw and FeatureHasher::Hash in one pass: each name is hashed where it
// lies in the line, with no Example built. out->features is what Hash
// would give for ParseVw's example (out->terms is scratch); the same
// errors, with out->features then unspecified.
absl::Status ParseVwHashed(std::string_view line, const FeatureHasher& hasher, HashedContext* out,
                           float* label, float* importance);
absl::Status ParseCriteo(std::string_view line, LabeledExample* out);

}  // namespace formats_internal
}  // namespace clickd

#endif  // CLICKD_CORE_FORMATS_PARSE_HELPERS_H_
