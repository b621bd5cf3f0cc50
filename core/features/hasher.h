// FeatureHasher turns an Example into (64-bit key, value) pairs.
//
// The hash is XXH3-64 with documented seeds (docs/hashing.md), so that a
// client in any language can reproduce keys:
//   namespace hash  ns  = XXH3_64(namespace name bytes, seed)
//   named feature   key = XXH3_64(feature name bytes, ns)
//   id feature      key = XXH3_64(id as 8 little-endian bytes, ns)
//   bias            key = XXH3_64("clickd.bias", seed)
//   cross a x b [x c] key = XXH3_64(key_a || key_b [|| key_c], seed), each as
//                         8 little-endian bytes, value = product of values
// A product or a merged sum beyond FLT_MAX saturates at +-FLT_MAX, so every
// hashed value of finite inputs is finite.
// Crosses use the unfolded keys; folding to 2^bits slots (VW's -b) is the last
// step. A FeatureHasher is immutable after construction and safe to share.
#ifndef CLICKD_CORE_FEATURES_HASHER_H_
#define CLICKD_CORE_FEATURES_HASHER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/features/example.h"

namespace clickd {

struct HashingConfig {
  uint64_t seed = 0;
  // 0 keeps full 64-bit keys; 1..62 folds keys into 2^bits slots.
  int bits = 0;
  // Adds a constant feature with value 1 to every example.
  bool bias = true;
  // Each entry names 2 or 3 namespaces whose features are crossed (VW's -q / --cubic).
  std::vector<std::vector<std::string>> interactions;
};

// Bounds on a config's interactions. They keep a model's config small: it is
// stored in MODEL files and snapshot headers and returned by ListModels for
// every model, so an unbounded list would make every caller's ListModels
// exceed gRPC's message limit. (Namespace names in requests may be longer;
// such a namespace simply cannot be crossed.)
inline constexpr size_t kMaxInteractions = 32;
inline constexpr size_t kMaxInteractionNameBytes = 64;

// Checks bits, the number of interactions, their arity and their namespace
// names' lengths; errors name the field and the limit.
absl::Status ValidateHashingConfig(const HashingConfig& config);

// The field of a feature no factorization field names (crosses, the bias,
// and every feature of a hasher without fields).
inline constexpr uint32_t kNoField = ~uint32_t{0};

struct HashedFeature {
  uint64_t key;
  float value;
  // The index of the feature's namespace in the hasher's factorization
  // fields, or kNoField (in the padding after value: no bytes added).
  uint32_t field = kNoField;
  friend bool operator==(const HashedFeature&, const HashedFeature&) = default;
};

// Sorts by key and merges repeated keys by adding their values, so that each
// coordinate appears once (and gets one gradient per example).
void SortAndMerge(std::vector<HashedFeature>* features);

// Merges repeated keys in features[first, end) by adding their values, in
// place, keeping the order of first appearance. What Hash uses: most
// examples have no repeats, and a small hash table finds that in a fraction
// of a sort's time.
void MergeDuplicates(std::vector<HashedFeature>* features, size_t first = 0);

// A context hashed once per request, for scoring many candidates with it.
struct HashedContext {
  // Folded, merged: the context's features, crosses among context
  // namespaces only, and the bias.
  std::vector<HashedFeature> features;
  // Unfolded features of each interaction term (interaction i, term j at
  // i * 3 + j), for crossing with each candidate.
  std::vector<std::vector<HashedFeature>> terms;
};

class FeatureHasher {
 public:
  // Unfolded features of each interaction term (interaction i, term j at
  // i * 3 + j).
  using TermLists = std::vector<std::vector<HashedFeature>>;

  explicit FeatureHasher(HashingConfig config);
  // With factorization fields (ModelConfig::factorization.fields): each
  // feature of namespace fields[i] is hashed with field i; others with
  // kNoField. Keys and values are the same as without fields.
  FeatureHasher(HashingConfig config, std::vector<std::string> fields);

  const HashingConfig& config() const { return config_; }

  // Appends the example's features, its crosses and the bias to `out`, then
  // merges repeated keys by adding their values (so that one coordinate gets
  // one gradient), keeping the order of first appearance. Takes a caller-owned buffer because this
  // is the per-example hot path and the buffer's capacity is reused.
  void Hash(const Example& example, std::vector<HashedFeature>* out) const;

  // Context + candidate hashing: for a context C and candidate K, the union
  // of HashContext(C).features and HashCandidate(C, K) (merged) holds the same
  // keys and values as Hash(C's namespaces followed by K's), so Predict scores exactly what
  // Update trains, while the context is hashed once per request.
  void HashContext(const Example& context, HashedContext* out) const;
  // Replaces *out with the candidate's own features and every cross with at
  // least one candidate feature, folded and merged.
  void HashCandidate(const HashedContext& context, const Example& candidate,
                     std::vector<HashedFeature>* out) const;

  // Collects one example's unfolded features namespace by namespace, which
  // is what Hash, HashContext and HashCandidate do with an Example, for
  // callers that hold examples in another form (a parsed PredictRequest,
  // wire/predict_request.h) and should not copy them into an Example first.
  // Finish with FinishContext or FinishCandidate.
  class Collector {
   public:
    // Appends features to *plain; clears *terms (one list per interaction
    // term) and appends to them.
    Collector(const FeatureHasher& hasher, std::vector<HashedFeature>* plain, TermLists* terms);
    Collector(const Collector&) = delete;
    Collector& operator=(const Collector&) = delete;

    // Starts the next example of a run (each candidate of a request) that
    // appends to the same *plain: clears *terms, as the constructor does.
    // The namespace looked up last stays known, so a run whose examples
    // share their namespaces hashes each name once.
    void NextExample();

    // Starts a namespace: the features added next are its own.
    void StartNamespace(std::string_view name);
    // Adds a feature of the current namespace; a value of 0 drops it.
    void AddNamed(std::string_view name, float value) {
      if (value != 0.0f) Add(NamedKey(namespace_hash_, name), value);
    }
    void AddId(uint64_t id, float value) {
      if (value != 0.0f) Add(IdKey(namespace_hash_, id), value);
    }
    // Adds a feature the client already hashed (NamedKey or IdKey of this
    // namespace's hash), unfolded.
    void AddKey(uint64_t key, float value) {
      if (value != 0.0f) Add(key, value);
    }
    // AddKey(key, 1) of each key, a list at a time: a value of 1 needs no
    // zero check, and the interaction terms are looked up once per list.
    void AddUnitKeys(absl::Span<const uint64_t> keys) {
      for (uint64_t key : keys) plain_->push_back({key, 1.0f, field_});
      for (int t : matching_) {
        for (uint64_t key : keys) (*terms_)[t].push_back({key, 1.0f});
      }
    }

   private:
    void Add(uint64_t key, float value) {
      plain_->push_back({key, value, field_});
      for (int t : matching_) (*terms_)[t].push_back({key, value});
    }

    const FeatureHasher& hasher_;
    std::vector<HashedFeature>* const plain_;
    TermLists* const terms_;
    uint64_t namespace_hash_ = 0;
    // The current namespace's factorization field, or kNoField.
    uint32_t field_ = kNoField;
    // The interaction terms that name the current namespace.
    absl::InlinedVector<int, 8> matching_;
    // The current namespace's name, once one started: the three members
    // above are what StartNamespace computes from it.
    std::string namespace_name_;
    bool has_namespace_ = false;
  };

  // Completes HashContext for a context whose features a Collector gathered
  // into out->features and out->terms: its crosses, the bias, fold, merge.
  void FinishContext(HashedContext* out) const;
  // Completes HashCandidate for a candidate whose features a Collector
  // appended to *out from index `first` (its terms in `terms`): appends the
  // crosses with at least one candidate feature, then folds and merges
  // (*out)[first, end).
  void FinishCandidate(const HashedContext& context, const TermLists& terms,
                       std::vector<HashedFeature>* out, size_t first) const;

  uint64_t NamespaceHash(std::string_view name) const;
  static uint64_t NamedKey(uint64_t namespace_hash, std::string_view name);
  static uint64_t IdKey(uint64_t namespace_hash, uint64_t id);
  uint64_t BiasKey() const;
  uint64_t CrossKey(const uint64_t* keys, int count) const;
  uint64_t Fold(uint64_t key) const { return key & fold_mask_; }

 private:
  // Appends the example's unfolded features to *plain and, for every
  // interaction term whose namespace name matches, to that term's list.
  void Collect(const Example& example, std::vector<HashedFeature>* plain, TermLists* terms) const;
  // Appends the crosses of context terms with candidate terms. With
  // `candidate` null, every cross of the context alone; otherwise only those
  // with at least one candidate feature. Positions run through the context's
  // list then the candidate's, as if the two examples were one.
  void AppendCrosses(const TermLists& context, const TermLists* candidate,
                     std::vector<HashedFeature>* out) const;
  void FoldAndMerge(std::vector<HashedFeature>* features, size_t first) const;

  HashingConfig config_;
  uint64_t fold_mask_;
  // Per interaction: the namespace hash of each term, and whether each term
  // names the same namespace as the one before it.
  struct CompiledInteraction {
    int arity;
    uint64_t namespace_hash[3];
    bool same_as_previous[3];
  };
  std::vector<CompiledInteraction> interactions_;
  // The namespace hash of each factorization field, in field order.
  std::vector<uint64_t> field_hashes_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_FEATURES_HASHER_H_
