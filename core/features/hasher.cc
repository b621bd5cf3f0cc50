#include "core/features/hasher.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "xxhash.h"

namespace clickd {
namespace {

constexpr std::string_view kBiasName = "clickd.bias";
constexpr int kMaxBits = 62;
constexpr int kMaxCrossArity = 3;

void PutLittleEndian64(uint64_t v, unsigned char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

}  // namespace

absl::Status ValidateHashingConfig(const HashingConfig& config) {
  if (config.bits < 0 || config.bits > kMaxBits) {
    return absl::InvalidArgumentError(
        absl::StrCat("hashing.bits is ", config.bits, "; must be 0 (no folding) or 1..", kMaxBits));
  }
  for (size_t i = 0; i < config.interactions.size(); ++i) {
    const size_t arity = config.interactions[i].size();
    if (arity < 2 || arity > kMaxCrossArity) {
      return absl::InvalidArgumentError(absl::StrCat("hashing.interactions[", i, "] has ", arity,
                                                     " namespaces; must have 2 or 3"));
    }
  }
  return absl::OkStatus();
}

FeatureHasher::FeatureHasher(HashingConfig config)
    : config_(std::move(config)),
      fold_mask_(config_.bits == 0 ? ~uint64_t{0} : (uint64_t{1} << config_.bits) - 1) {}

uint64_t FeatureHasher::NamespaceHash(std::string_view name) const {
  return XXH3_64bits_withSeed(name.data(), name.size(), config_.seed);
}

uint64_t FeatureHasher::NamedKey(uint64_t namespace_hash, std::string_view name) {
  return XXH3_64bits_withSeed(name.data(), name.size(), namespace_hash);
}

uint64_t FeatureHasher::IdKey(uint64_t namespace_hash, uint64_t id) {
  unsigned char bytes[8];
  PutLittleEndian64(id, bytes);
  return XXH3_64bits_withSeed(bytes, sizeof(bytes), namespace_hash);
}

uint64_t FeatureHasher::BiasKey() const {
  return XXH3_64bits_withSeed(kBiasName.data(), kBiasName.size(), config_.seed);
}

uint64_t FeatureHasher::CrossKey(const uint64_t* keys, int count) const {
  unsigned char bytes[8 * kMaxCrossArity];
  for (int i = 0; i < count; ++i) PutLittleEndian64(keys[i], bytes + 8 * i);
  return XXH3_64bits_withSeed(bytes, 8 * count, config_.seed);
}

void FeatureHasher::Hash(const Example& example, std::vector<HashedFeature>* out) const {
  const size_t first = out->size();
  // Unfolded keys of the plain features, grouped by namespace, so that crosses
  // hash full keys and fold once at the end.
  thread_local std::vector<HashedFeature> unfolded;
  thread_local std::vector<size_t> namespace_begin;
  unfolded.clear();
  namespace_begin.clear();
  for (const Namespace& ns : example.namespaces) {
    namespace_begin.push_back(unfolded.size());
    const uint64_t ns_hash = NamespaceHash(ns.name);
    for (const Feature& f : ns.features) {
      if (f.value == 0.0f) continue;  // contributes neither margin nor gradient
      const uint64_t key = f.has_id ? IdKey(ns_hash, f.id) : NamedKey(ns_hash, f.name);
      unfolded.push_back({key, f.value});
    }
  }
  namespace_begin.push_back(unfolded.size());

  out->insert(out->end(), unfolded.begin(), unfolded.end());
  if (!config_.interactions.empty()) AppendCrosses(example, unfolded, namespace_begin, out);
  if (config_.bias) out->push_back({BiasKey(), 1.0f});

  // Fold, then merge repeated keys so that each coordinate appears once.
  auto begin = out->begin() + first;
  for (auto it = begin; it != out->end(); ++it) it->key = Fold(it->key);
  std::sort(begin, out->end(),
            [](const HashedFeature& a, const HashedFeature& b) { return a.key < b.key; });
  auto write = begin;
  for (auto read = begin; read != out->end(); ++read) {
    if (write != begin && (write - 1)->key == read->key) {
      (write - 1)->value += read->value;
    } else {
      *write++ = *read;
    }
  }
  out->erase(write, out->end());
}

// Crosses every feature of the first named namespace with every feature of
// the second (and third). Where two adjacent names in an interaction are the
// same namespace, only strictly increasing feature positions are crossed, so
// "a x a" yields each unordered pair once and never a feature with itself.
void FeatureHasher::AppendCrosses(const Example& example,
                                  const std::vector<HashedFeature>& unfolded,
                                  const std::vector<size_t>& namespace_begin,
                                  std::vector<HashedFeature>* out) const {
  const size_t num_namespaces = example.namespaces.size();
  // Positions (into `unfolded`) of the features of each interaction term.
  std::vector<size_t> term_positions[kMaxCrossArity];
  for (const std::vector<std::string>& names : config_.interactions) {
    const int arity = static_cast<int>(names.size());
    for (int j = 0; j < arity; ++j) {
      term_positions[j].clear();
      for (size_t n = 0; n < num_namespaces; ++n) {
        if (example.namespaces[n].name != names[j]) continue;
        for (size_t p = namespace_begin[n]; p < namespace_begin[n + 1]; ++p) {
          term_positions[j].push_back(p);
        }
      }
    }
    uint64_t keys[kMaxCrossArity];
    for (size_t a : term_positions[0]) {
      keys[0] = unfolded[a].key;
      for (size_t b : term_positions[1]) {
        if (names[1] == names[0] && b <= a) continue;
        keys[1] = unfolded[b].key;
        const float ab = unfolded[a].value * unfolded[b].value;
        if (arity == 2) {
          out->push_back({CrossKey(keys, 2), ab});
          continue;
        }
        for (size_t c : term_positions[2]) {
          if (names[2] == names[1] && c <= b) continue;
          keys[2] = unfolded[c].key;
          out->push_back({CrossKey(keys, 3), ab * unfolded[c].value});
        }
      }
    }
  }
}

}  // namespace clickd
