#include "core/features/hasher.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
// Inlined: a feature name is a few bytes, and the library call (through the
// PLT, dispatching on the length at run time) cost more than the hash.
#define XXH_INLINE_ALL
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
  if (config.interactions.size() > kMaxInteractions) {
    return absl::InvalidArgumentError(absl::StrCat("hashing.interactions has ",
                                                   config.interactions.size(),
                                                   " entries; the limit is ", kMaxInteractions));
  }
  for (size_t i = 0; i < config.interactions.size(); ++i) {
    const size_t arity = config.interactions[i].size();
    if (arity < 2 || arity > kMaxCrossArity) {
      return absl::InvalidArgumentError(absl::StrCat("hashing.interactions[", i, "] has ", arity,
                                                     " namespaces; must have 2 or 3"));
    }
    for (size_t j = 0; j < arity; ++j) {
      const size_t bytes = config.interactions[i][j].size();
      if (bytes == 0 || bytes > kMaxInteractionNameBytes) {
        return absl::InvalidArgumentError(absl::StrCat("hashing.interactions[", i, "][", j, "] is ",
                                                       bytes, " bytes long; must be 1..",
                                                       kMaxInteractionNameBytes));
      }
    }
  }
  return absl::OkStatus();
}

FeatureHasher::FeatureHasher(HashingConfig config)
    : config_(std::move(config)),
      fold_mask_(config_.bits == 0 ? ~uint64_t{0} : (uint64_t{1} << config_.bits) - 1) {
  for (const std::vector<std::string>& names : config_.interactions) {
    CompiledInteraction c{};
    c.arity = static_cast<int>(std::min<size_t>(names.size(), kMaxCrossArity));
    for (int j = 0; j < c.arity; ++j) {
      c.namespace_hash[j] = NamespaceHash(names[j]);
      c.same_as_previous[j] = j > 0 && names[j] == names[j - 1];
    }
    interactions_.push_back(c);
  }
}

FeatureHasher::FeatureHasher(HashingConfig config, std::vector<std::string> fields)
    : FeatureHasher(std::move(config)) {
  for (const std::string& name : fields) field_hashes_.push_back(NamespaceHash(name));
}

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

namespace {

// a == b, by a loop the compiler keeps inline (std::equal and == become a
// memcmp call, which costs more than a short name's few bytes).
bool SameBytes(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

// A finite float for a cross's product or a merged sum: +-inf (finite
// values beyond FLT_MAX) becomes +-FLT_MAX, so every hashed value is finite.
float SaturateFloat(float v) {
  constexpr float kMax = std::numeric_limits<float>::max();
  return std::clamp(v, -kMax, kMax);
}

}  // namespace

uint64_t FeatureHasher::CrossKey(const uint64_t* keys, int count) const {
  unsigned char bytes[8 * kMaxCrossArity];
  // Bounded where the compiler sees it (count is 2 or 3), so that the
  // inlined hash keeps no path for inputs longer than `bytes`.
  const size_t n = static_cast<size_t>(std::clamp(count, 0, kMaxCrossArity));
  for (size_t i = 0; i < n; ++i) PutLittleEndian64(keys[i], bytes + 8 * i);
  return XXH3_64bits_withSeed(bytes, 8 * n, config_.seed);
}

void SortAndMerge(std::vector<HashedFeature>* features) {
  std::sort(features->begin(), features->end(),
            [](const HashedFeature& a, const HashedFeature& b) { return a.key < b.key; });
  auto write = features->begin();
  for (auto read = features->begin(); read != features->end(); ++read) {
    if (write != features->begin() && (write - 1)->key == read->key) {
      (write - 1)->value = SaturateFloat((write - 1)->value + read->value);
    } else {
      *write++ = *read;
    }
  }
  features->erase(write, features->end());
}

FeatureHasher::Collector::Collector(const FeatureHasher& hasher, std::vector<HashedFeature>* plain,
                                    TermLists* terms)
    : hasher_(hasher), plain_(plain), terms_(terms) {
  terms->resize(hasher.interactions_.size() * kMaxCrossArity);
  NextExample();
}

void FeatureHasher::Collector::NextExample() {
  for (auto& t : *terms_) t.clear();
}

void FeatureHasher::Collector::StartNamespace(std::string_view name) {
  // The same name as the namespace before: the same hash, field and terms.
  // Compared inline, as names are short and a memcmp call costs more.
  if (has_namespace_ && SameBytes(name, namespace_name_)) return;
  namespace_name_.assign(name);
  has_namespace_ = true;
  namespace_hash_ = hasher_.NamespaceHash(name);
  field_ = kNoField;
  for (size_t i = 0; i < hasher_.field_hashes_.size(); ++i) {
    if (hasher_.field_hashes_[i] == namespace_hash_) {
      field_ = static_cast<uint32_t>(i);
      break;
    }
  }
  matching_.clear();
  const std::vector<CompiledInteraction>& interactions = hasher_.interactions_;
  for (size_t i = 0; i < interactions.size(); ++i) {
    for (int j = 0; j < interactions[i].arity; ++j) {
      if (interactions[i].namespace_hash[j] == namespace_hash_) {
        matching_.push_back(static_cast<int>(i * kMaxCrossArity + j));
      }
    }
  }
}

void FeatureHasher::Collect(const Example& example, std::vector<HashedFeature>* plain,
                            TermLists* terms) const {
  Collector collector(*this, plain, terms);
  for (const Namespace& ns : example.namespaces) {
    collector.StartNamespace(ns.name);
    for (const Feature& f : ns.features) {
      if (f.is_key) {
        collector.AddKey(f.id, f.value);
      } else if (f.has_id) {
        collector.AddId(f.id, f.value);
      } else {
        collector.AddNamed(f.name, f.value);
      }
    }
  }
}

void MergeDuplicates(std::vector<HashedFeature>* features, size_t first) {
  const size_t n = features->size() - first;
  if (n <= 1) return;
  // Open addressing over slot indices (+1; 0 is empty), at most half full.
  constexpr size_t kMaxSlots = 1024;
  size_t slots = 16;
  while (slots < 2 * n) slots *= 2;
  if (slots > kMaxSlots) {
    std::vector<HashedFeature> tail(features->begin() + first, features->end());
    SortAndMerge(&tail);
    features->resize(first);
    features->insert(features->end(), tail.begin(), tail.end());
    return;
  }
  uint16_t table[kMaxSlots];
  std::fill(table, table + slots, 0);
  const int shift = 64 - std::countr_zero(slots);
  HashedFeature* f = features->data() + first;
  size_t write = 0;
  for (size_t read = 0; read < n; ++read) {
    // Folded keys keep only low bits, so mix before taking the high ones.
    size_t h = (f[read].key * 0x9E3779B97F4A7C15ull) >> shift;
    for (;; h = (h + 1) & (slots - 1)) {
      if (table[h] == 0) {
        table[h] = static_cast<uint16_t>(write + 1);
        f[write++] = f[read];
        break;
      }
      if (f[table[h] - 1].key == f[read].key) {
        f[table[h] - 1].value = SaturateFloat(f[table[h] - 1].value + f[read].value);
        break;
      }
    }
  }
  features->resize(first + write);
}

void FeatureHasher::FoldAndMerge(std::vector<HashedFeature>* features, size_t first) const {
  if (fold_mask_ != ~uint64_t{0}) {
    for (size_t i = first; i < features->size(); ++i) (*features)[i].key &= fold_mask_;
  }
  // A candidate of one feature has nothing to merge: spared the call.
  if (features->size() - first > 1) MergeDuplicates(features, first);
}

void FeatureHasher::Hash(const Example& example, std::vector<HashedFeature>* out) const {
  const size_t first = out->size();
  thread_local TermLists terms;
  Collect(example, out, &terms);
  if (!interactions_.empty()) AppendCrosses(terms, nullptr, out);
  if (config_.bias) out->push_back({BiasKey(), 1.0f});
  FoldAndMerge(out, first);
}

void FeatureHasher::HashContext(const Example& context, HashedContext* out) const {
  out->features.clear();
  Collect(context, &out->features, &out->terms);
  FinishContext(out);
}

void FeatureHasher::FinishContext(HashedContext* out) const {
  if (!interactions_.empty()) AppendCrosses(out->terms, nullptr, &out->features);
  if (config_.bias) out->features.push_back({BiasKey(), 1.0f});
  FoldAndMerge(&out->features, 0);
}

void FeatureHasher::HashCandidate(const HashedContext& context, const Example& candidate,
                                  std::vector<HashedFeature>* out) const {
  out->clear();
  thread_local TermLists terms;
  Collect(candidate, out, &terms);
  FinishCandidate(context, terms, out, 0);
}

void FeatureHasher::FinishCandidate(const HashedContext& context, const TermLists& terms,
                                    std::vector<HashedFeature>* out, size_t first) const {
  if (!interactions_.empty()) AppendCrosses(context.terms, &terms, out);
  FoldAndMerge(out, first);
}

// Crosses every feature of the first named namespace with every feature of
// the second (and third). Where two adjacent names in an interaction are the
// same namespace, only strictly increasing positions are crossed, so "a x a"
// yields each unordered pair once and never a feature with itself.
void FeatureHasher::AppendCrosses(const TermLists& context, const TermLists* candidate,
                                  std::vector<HashedFeature>* out) const {
  static const std::vector<HashedFeature> kEmpty;
  for (size_t i = 0; i < interactions_.size(); ++i) {
    const CompiledInteraction& in = interactions_[i];
    const std::vector<HashedFeature>* ctx[kMaxCrossArity];
    const std::vector<HashedFeature>* cand[kMaxCrossArity];
    size_t n[kMaxCrossArity];
    bool any_candidate = false;
    for (int j = 0; j < in.arity; ++j) {
      ctx[j] = &context[i * kMaxCrossArity + j];
      cand[j] = candidate ? &(*candidate)[i * kMaxCrossArity + j] : &kEmpty;
      n[j] = ctx[j]->size() + cand[j]->size();
      any_candidate |= !cand[j]->empty();
    }
    if (candidate != nullptr && !any_candidate) continue;
    // Position p of term j: the context's features first, then the candidate's.
    auto at = [&](int j, size_t p) -> const HashedFeature& {
      return p < ctx[j]->size() ? (*ctx[j])[p] : (*cand[j])[p - ctx[j]->size()];
    };
    auto first_position = [&](int j, size_t previous, bool have_candidate) {
      size_t p = in.same_as_previous[j] ? previous + 1 : 0;
      // The last term must supply a candidate feature if none came before.
      if (candidate != nullptr && !have_candidate && j == in.arity - 1) {
        p = std::max(p, ctx[j]->size());
      }
      return p;
    };
    uint64_t keys[kMaxCrossArity];
    for (size_t a = 0; a < n[0]; ++a) {
      const HashedFeature& fa = at(0, a);
      const bool cand_a = a >= ctx[0]->size();
      keys[0] = fa.key;
      for (size_t b = first_position(1, a, cand_a); b < n[1]; ++b) {
        const HashedFeature& fb = at(1, b);
        const bool cand_ab = cand_a || b >= ctx[1]->size();
        keys[1] = fb.key;
        // Saturated: a product of large finite values must not be inf.
        const float ab = SaturateFloat(fa.value * fb.value);
        if (in.arity == 2) {
          out->push_back({CrossKey(keys, 2), ab});
          continue;
        }
        for (size_t c = first_position(2, b, cand_ab); c < n[2]; ++c) {
          const HashedFeature& fc = at(2, c);
          keys[2] = fc.key;
          out->push_back({CrossKey(keys, 3), SaturateFloat(ab * fc.value)});
        }
      }
    }
  }
}

}  // namespace clickd
