// Fuzzes the vw line parser: any line gives an example or an error, and
// the fused path (ParseLineHashed: names hashed in the line) gives exactly
// what parsing then hashing gives, or the same error.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/features/hasher.h"
#include "core/formats/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static clickd::LabeledExample example;  // reused, as the reader does
  static clickd::HashedLine hashed_line;
  static const clickd::FeatureHasher hasher([] {
    clickd::HashingConfig config;
    config.interactions = {{"a", "b"}, {"a", "a"}};
    return config;
  }());
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const absl::Status parsed = clickd::ParseLine(clickd::InputFormat::kVw, line, &example);
  const absl::Status fused =
      clickd::ParseLineHashed(clickd::InputFormat::kVw, line, hasher, &hashed_line);
  if (parsed != fused) std::abort();
  if (parsed.ok()) {
    std::vector<clickd::HashedFeature> features;
    hasher.Hash(example.example, &features);
    const auto& got = hashed_line.hashed.features;
    if (got.size() != features.size()) std::abort();
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i].key != features[i].key) std::abort();
      if (std::memcmp(&got[i].value, &features[i].value, sizeof(float)) != 0) std::abort();
    }
    if (hashed_line.label != example.label || hashed_line.importance != example.importance) {
      std::abort();
    }
  }
  if (parsed.ok()) {
    // Accepted values are finite: the parsers promise it.
    if (!std::isfinite(example.label) || !std::isfinite(example.importance)) std::abort();
    for (const auto& ns : example.example.namespaces) {
      for (const auto& f : ns.features) {
        if (!std::isfinite(f.value)) std::abort();
      }
    }
  }
  return 0;
}
