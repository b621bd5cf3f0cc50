// The pairwise part of a factorization machine's margin and its learning
// step (ModelConfig::factorization, docs/factorization.md).
//
// Each feature of a factorization field (HashedFeature::field != kNoField)
// holds a row of latent factors: FM one vector of dim floats (Rendle 2010),
// FFM one per field, F * dim floats, the vector for field b at b * dim
// (Juan et al. 2016). The pairwise margin over the example's field
// features i < j is
//   FM:  sum <v_i, v_j> x_i x_j
//   FFM: sum <w_{i,f_j}, w_{j,f_i}> x_i x_j
// computed in O(n k) (FM) and O(n F k) (FFM) through per-field sums
//   S[a][b] = sum_{i in field a} w_{i,b} x_i     (FM: one S)
// as  sum_{a<b} <S[a][b], S[b][a]> + 1/2 sum_a (|S[a][a]|^2 - sum_{i in a} x_i^2 |w_{i,a}|^2).
// With instance normalisation (FactorizationConfig::normalize, libffm's
// default) that margin is divided by sum_i x_i^2 over the example's field
// features: the pairwise margin is quadratic in x, so this is libffm's
// scaling of each instance to unit length, and it keeps an example of many
// fields from starting at a margin that grows with its pairs.
// The same sums give each factor's gradient, and a shared context's sums
// are computed once per request, each candidate adding its own.
//
// The factors learn with per-coordinate AdaGrad (eta / sqrt(1 + sum g^2),
// libffm's) and an L2 weight, from the loss gradient the linear part steps
// on. Numeric invariant (core/optim/numeric_bounds.h): each factor's
// gradient is clamped to +-kMaxCoordinateGradient and every stored float
// saturates at +-kMaxStateValue, so no input makes a factor non-finite.
//
// Pure computation over rows the caller owns; thread-compatible.
#ifndef CLICKD_CORE_MODEL_FACTORIZATION_H_
#define CLICKD_CORE_MODEL_FACTORIZATION_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "core/features/hasher.h"
#include "core/model/explain.h"
#include "core/model/model_config.h"

namespace clickd {

// One field feature of an example with its factor row: `row` holds
// Factorization::row_floats() factors followed by as many AdaGrad sums of
// squared gradients (a FactorTable row).
struct FactorTerm {
  uint64_t key = 0;
  double x = 0;
  uint32_t field = 0;  // < the number of fields
  float* row = nullptr;
};

class Factorization {
 public:
  explicit Factorization(const FactorizationConfig& config);

  bool field_aware() const { return field_aware_; }
  int dim() const { return dim_; }
  int num_fields() const { return num_fields_; }
  // Factors per feature: dim (FM) or fields * dim (FFM).
  int row_floats() const { return row_floats_; }

  // The per-field sums of a set of terms (an example, or a request's
  // context). FM keeps one field's worth.
  struct Sums {
    std::vector<double> s;     // [a][b][d] for FFM, [d] for FM
    std::vector<double> self;  // [a]: sum_{i in a} x_i^2 |w_{i,a}|^2 (FM: [0])
    std::vector<int> count;    // [a]: terms of field a (FM: [0], all terms)
    double squared = 0;        // sum_i x_i^2: the normalisation's divisor
    // A context's terms by key, to score a candidate repeating one of them
    // as the merged feature it is in an update.
    absl::flat_hash_map<uint64_t, const FactorTerm*> keys;
    // A 256-bit filter of `keys` (bit KeyBit(key)): a candidate's key
    // whose bit is clear is not among them, which spares most candidate
    // terms a lookup in `keys`.
    uint64_t key_filter[4] = {0, 0, 0, 0};
  };

  // Sets *sums to the terms' sums (with their keys if `keep_keys`).
  void ComputeSums(absl::Span<const FactorTerm> terms, Sums* sums, bool keep_keys = false) const;

  // The pairwise margin of the terms whose sums are `sums` (normalised if
  // the config says so).
  double PairwiseMargin(const Sums& sums) const {
    return Scale(sums.squared) * UnscaledMargin(sums);
  }

  // The pairwise margin of a candidate's terms scored with a shared
  // context's sums (ComputeSums with keep_keys): the pairwise margin of
  // the union of both, as the update that merges them would have it (a
  // candidate key the context holds too is one feature whose value is
  // the sum). Costs O(candidate terms * F * k + F^2 k). `scratch` is
  // reused between candidates.
  double CandidateMargin(const Sums& context, absl::Span<const FactorTerm> candidate,
                         Sums* scratch) const;

  // d(pairwise margin)/d(factor) of term i's row, into out[0..row_floats):
  // the gradient the step follows (times the loss gradient). The
  // normalisation's divisor depends on the values only, so it scales the
  // gradient as it scales the margin.
  void MarginGradient(absl::Span<const FactorTerm> terms, const Sums& sums, size_t i,
                      double* out) const;

  // One AdaGrad step of every term's factors, with the gradient of the
  // loss `dloss` (dloss/dmargin times the importance) at the factors
  // `sums` were computed from (the pre-update margin's). A factor vector
  // with no partner in the example (FFM: no other term of its field) takes
  // no step, as in libffm, which visits pairs only.
  void Step(absl::Span<const FactorTerm> terms, const Sums& sums, double dloss) const;

  // Every pair i < j of the terms with its part of their pairwise margin
  // (scaled as PairwiseMargin scales it), appended to *out; the parts add
  // up to PairwiseMargin. O(n^2 k): for explanations only, whose caller
  // bounds n (CheckExplanationSize).
  void Pairs(absl::Span<const FactorTerm> terms, std::vector<PairContribution>* out) const;

  // The initial factors of `key`: uniform in [0, init_scale) (0: 1/sqrt(dim)),
  // from the key and init_seed alone; the AdaGrad sums 0.
  void InitialRow(uint64_t key, float* row) const;

 private:
  // What the unscaled pairwise margin is multiplied by for terms whose
  // values have squared norm `squared`: 1 / squared with normalisation
  // (1 when squared is 0: no term, or every value 0), else 1.
  double Scale(double squared) const { return normalize_ && squared > 0 ? 1.0 / squared : 1.0; }
  double UnscaledMargin(const Sums& sums) const;
  // Adds the terms to *sums (not to its keys).
  void AddTerms(absl::Span<const FactorTerm> terms, Sums* sums) const;
  // A key's bit in Sums::key_filter: 8 bits of the (hashed) key.
  static uint32_t KeyBit(uint64_t key) { return static_cast<uint32_t>(key >> 40) & 255; }

  bool field_aware_;
  int dim_;
  int num_fields_;
  int row_floats_;
  double init_scale_;
  uint64_t init_seed_;
  double eta_;
  double l2_;
  bool normalize_;
};

// The factor rows of a model's field features, by (folded) key: each row
// is 2 * row_floats floats (factors, then their AdaGrad sums). Not
// synchronized.
class FactorTable {
 public:
  explicit FactorTable(const Factorization& factorization)
      : factorization_(factorization), stride_(2 * factorization.row_floats()) {}

  // The row of `key`, or null.
  const float* Find(uint64_t key) const;
  float* Find(uint64_t key);
  // The row of `key`, made with InitialRow if new. Rows move when the
  // table grows: a pointer is valid until the next FindOrInsert.
  float* FindOrInsert(uint64_t key);
  // Forgets `key`'s row (its coordinate was evicted): a key seen again
  // starts from its initial factors.
  void Erase(uint64_t key);
  // Makes room for `n` more rows (at most max_rows in all), so that as
  // many FindOrInsert calls allocate nothing (Model::ReserveFor); may throw
  // std::bad_alloc, changing no row.
  void Reserve(size_t n) {
    n = std::min(n, max_rows_ - std::min(max_rows_, index_.size()));
    index_.reserve(index_.size() + n);
    rows_.reserve(std::max(rows_.capacity(), rows_.size() + n * stride_));
  }
  // Under a memory budget: the table never holds more than `rows` rows
  // (the shard's coordinates, of which they are a subset), and its row
  // storage never grows past that many, so the budget can count them.
  void set_max_rows(size_t rows) { max_rows_ = rows; }
  // Removes every row.
  void Clear();
  // Sets `key`'s row to the stride() floats at `row` (a restore).
  void Assign(uint64_t key, const float* row);
  // Calls fn(key, const float* row) for every row, in no order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const auto& [key, index] : index_) fn(key, rows_.data() + index * stride_);
  }
  size_t size() const { return index_.size(); }
  size_t stride() const { return stride_; }

 private:
  const Factorization& factorization_;
  const size_t stride_;
  absl::flat_hash_map<uint64_t, uint32_t> index_;  // key -> row number
  std::vector<float> rows_;
  std::vector<uint32_t> free_;
  size_t max_rows_ = SIZE_MAX;
};

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_FACTORIZATION_H_
