// The Criteo TSV line parser behind ParseLine (parse.h): label, I1..I13,
// C1..C26, tab-separated. docs/input_formats.md says what it accepts.
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "core/formats/parse_helpers.h"

namespace clickd {
namespace formats_internal {
namespace {

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

}  // namespace

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

}  // namespace formats_internal
}  // namespace clickd
