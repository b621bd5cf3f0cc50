#include "bench/throughput/fused_vw.h"

#include <charconv>
#include <cmath>

namespace clickd::bench {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

bool ParseFloat(std::string_view text, float* value) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || !std::isfinite(v)) return false;
  *value = static_cast<float>(v);
  return true;
}

// Hashes the features of one "ns feat[:value] ..." segment into *out.
bool HashSegment(const FeatureHasher& hasher, std::string_view segment,
                 std::vector<HashedFeature>* out) {
  size_t i = 0;
  while (i < segment.size() && !IsSpace(segment[i])) ++i;
  const std::string_view name = segment.substr(0, i);
  if (name.find(':') != std::string_view::npos) return false;  // no namespace scale
  const uint64_t ns_hash = hasher.NamespaceHash(name);
  while (true) {
    while (i < segment.size() && IsSpace(segment[i])) ++i;
    if (i == segment.size()) return true;
    const size_t begin = i;
    while (i < segment.size() && !IsSpace(segment[i])) ++i;
    std::string_view token = segment.substr(begin, i - begin);
    float value = 1.0f;
    if (const size_t colon = token.find(':'); colon != std::string_view::npos) {
      if (!ParseFloat(token.substr(colon + 1), &value)) return false;
      token = token.substr(0, colon);
    }
    if (value != 0.0f) out->push_back({FeatureHasher::NamedKey(ns_hash, token), value});
  }
}

}  // namespace

bool ParseAndHashVwLine(const FeatureHasher& hasher, std::string_view line,
                        std::vector<HashedFeature>* out, float* label) {
  const size_t bar = line.find('|');
  if (bar == std::string_view::npos) return false;
  std::string_view head = line.substr(0, bar);
  while (!head.empty() && IsSpace(head.back())) head.remove_suffix(1);
  if (!ParseFloat(head, label)) return false;  // a label alone: no importance or tag
  const size_t first = out->size();
  std::string_view rest = line.substr(bar + 1);
  while (true) {
    const size_t next = rest.find('|');
    if (!HashSegment(hasher, rest.substr(0, next), out)) return false;
    if (next == std::string_view::npos) break;
    rest.remove_prefix(next + 1);
  }
  if (hasher.config().bias) out->push_back({hasher.BiasKey(), 1.0f});
  // FeatureHasher::Hash's merge (first-appearance order), so that the
  // outputs compare equal.
  MergeDuplicates(out, first);
  return true;
}

}  // namespace clickd::bench
