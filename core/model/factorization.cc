#include "core/model/factorization.h"

#include <algorithm>
#include <cmath>

#include "core/optim/numeric_bounds.h"

namespace clickd {
namespace {

uint64_t SplitMix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Dot(const double* a, const double* b, int n) {
  double sum = 0;
  for (int d = 0; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

double SquaredNorm(const float* v, int n) {
  double sum = 0;
  for (int d = 0; d < n; ++d) sum += static_cast<double>(v[d]) * v[d];
  return sum;
}

float Saturate(double v) {
  return static_cast<float>(
      std::clamp(v, -static_cast<double>(kMaxStateValue), static_cast<double>(kMaxStateValue)));
}

}  // namespace

Factorization::Factorization(const FactorizationConfig& config)
    : field_aware_(config.kind == FactorizationConfig::Kind::kFfm),
      dim_(config.dim),
      num_fields_(static_cast<int>(config.fields.size())),
      row_floats_(field_aware_ ? num_fields_ * dim_ : dim_),
      init_scale_(config.init_scale != 0 ? config.init_scale : 1.0 / std::sqrt(config.dim)),
      init_seed_(config.init_seed),
      eta_(config.eta),
      l2_(config.l2),
      normalize_(config.normalize) {}

void Factorization::ComputeSums(absl::Span<const FactorTerm> terms, Sums* sums,
                                bool keep_keys) const {
  const int groups = field_aware_ ? num_fields_ : 1;
  sums->s.assign(static_cast<size_t>(groups) * groups * dim_, 0.0);
  sums->self.assign(groups, 0.0);
  sums->count.assign(groups, 0);
  sums->squared = 0;
  sums->keys.clear();
  std::fill(std::begin(sums->key_filter), std::end(sums->key_filter), 0);
  AddTerms(terms, sums);
  if (!keep_keys) return;
  for (const FactorTerm& t : terms) {
    sums->keys.emplace(t.key, &t);
    const uint32_t bit = KeyBit(t.key);
    sums->key_filter[bit >> 6] |= uint64_t{1} << (bit & 63);
  }
}

void Factorization::AddTerms(absl::Span<const FactorTerm> terms, Sums* sums) const {
  const size_t group_floats = static_cast<size_t>(field_aware_ ? num_fields_ : 1) * dim_;
  for (const FactorTerm& t : terms) {
    const int a = field_aware_ ? static_cast<int>(t.field) : 0;
    double* s = sums->s.data() + a * group_floats;
    for (int j = 0; j < row_floats_; ++j) s[j] += t.row[j] * t.x;
    sums->self[a] += t.x * t.x * SquaredNorm(t.row + (field_aware_ ? a * dim_ : 0), dim_);
    sums->count[a] += 1;
    sums->squared += t.x * t.x;
  }
}

double Factorization::UnscaledMargin(const Sums& sums) const {
  if (!field_aware_) {
    return 0.5 * (Dot(sums.s.data(), sums.s.data(), dim_) - sums.self[0]);
  }
  const size_t f = static_cast<size_t>(num_fields_);
  auto at = [&](size_t a, size_t b) { return sums.s.data() + (a * f + b) * dim_; };
  double margin = 0;
  for (size_t a = 0; a < f; ++a) {
    if (sums.count[a] == 0) continue;
    margin += 0.5 * (Dot(at(a, a), at(a, a), dim_) - sums.self[a]);
    for (size_t b = a + 1; b < f; ++b) {
      if (sums.count[b] != 0) margin += Dot(at(a, b), at(b, a), dim_);
    }
  }
  return margin;
}

double Factorization::CandidateMargin(const Sums& context, absl::Span<const FactorTerm> candidate,
                                      Sums* scratch) const {
  // The union's sums: the context's, which are computed once, plus the
  // candidate's terms (the merged keys corrected below).
  scratch->s = context.s;
  scratch->self = context.self;
  scratch->count = context.count;
  scratch->squared = context.squared;
  AddTerms(candidate, scratch);
  double margin = UnscaledMargin(*scratch);
  double squared = scratch->squared;
  if (context.keys.empty()) return Scale(squared) * margin;
  // A key in both is one feature of value x_c + x_k: its self term is
  // (x_c + x_k)^2 |w|^2, not x_c^2 |w|^2 + x_k^2 |w|^2, and it adds
  // (x_c + x_k)^2 to the squared norm.
  for (const FactorTerm& t : candidate) {
    const uint32_t bit = KeyBit(t.key);
    if ((context.key_filter[bit >> 6] & (uint64_t{1} << (bit & 63))) == 0) continue;
    auto it = context.keys.find(t.key);
    if (it == context.keys.end()) continue;
    const FactorTerm& c = *it->second;
    const int a = field_aware_ ? static_cast<int>(c.field) : 0;
    margin -= c.x * t.x * SquaredNorm(c.row + (field_aware_ ? a * dim_ : 0), dim_);
    squared += 2 * c.x * t.x;
  }
  return Scale(squared) * margin;
}

void Factorization::MarginGradient(absl::Span<const FactorTerm> terms, const Sums& sums, size_t i,
                                   double* out) const {
  const FactorTerm& t = terms[i];
  const double scale = Scale(sums.squared);
  if (!field_aware_) {
    for (int d = 0; d < dim_; ++d) out[d] = scale * t.x * (sums.s[d] - t.row[d] * t.x);
    return;
  }
  const size_t f = static_cast<size_t>(num_fields_);
  const size_t a = t.field;
  for (size_t b = 0; b < f; ++b) {
    // w_{i,b} pairs with S[b][a], less i's own share when b is i's field.
    const double* s = sums.s.data() + (b * f + a) * dim_;
    const float* w = t.row + b * dim_;
    double* g = out + b * dim_;
    for (int d = 0; d < dim_; ++d) g[d] = scale * t.x * (s[d] - (b == a ? w[d] * t.x : 0.0));
  }
}

void Factorization::Step(absl::Span<const FactorTerm> terms, const Sums& sums, double dloss) const {
  thread_local std::vector<double> gradient;
  gradient.resize(row_floats_);
  const int vectors = field_aware_ ? num_fields_ : 1;
  for (size_t i = 0; i < terms.size(); ++i) {
    const FactorTerm& t = terms[i];
    MarginGradient(terms, sums, i, gradient.data());
    float* w = t.row;
    float* sum_g2 = t.row + row_floats_;
    for (int b = 0; b < vectors; ++b) {
      const int own = field_aware_ ? static_cast<int>(t.field) : 0;
      const int partners = sums.count[field_aware_ ? b : 0] - (b == own ? 1 : 0);
      if (partners <= 0) continue;
      for (int d = b * dim_; d < (b + 1) * dim_; ++d) {
        const double g = ClampGradient(dloss * gradient[d] + l2_ * w[d]);
        const double g2 =
            std::min(static_cast<double>(sum_g2[d]) + g * g, static_cast<double>(kMaxStateValue));
        sum_g2[d] = static_cast<float>(g2);
        w[d] = Saturate(w[d] - eta_ * g / std::sqrt(1.0 + g2));
      }
    }
  }
}

void Factorization::Pairs(absl::Span<const FactorTerm> terms,
                          std::vector<PairContribution>* out) const {
  double squared = 0;
  for (const FactorTerm& t : terms) squared += t.x * t.x;
  const double scale = Scale(squared);
  for (size_t i = 0; i < terms.size(); ++i) {
    for (size_t j = i + 1; j < terms.size(); ++j) {
      const FactorTerm& a = terms[i];
      const FactorTerm& b = terms[j];
      // FFM: a's vector for b's field with b's vector for a's field.
      const float* va = a.row + (field_aware_ ? b.field * dim_ : 0);
      const float* vb = b.row + (field_aware_ ? a.field * dim_ : 0);
      double dot = 0;
      for (int d = 0; d < dim_; ++d) dot += static_cast<double>(va[d]) * vb[d];
      out->push_back({std::min(a.key, b.key), std::max(a.key, b.key), scale * dot * a.x * b.x});
    }
  }
}

void Factorization::InitialRow(uint64_t key, float* row) const {
  const uint64_t base = SplitMix64(key ^ SplitMix64(init_seed_));
  for (int j = 0; j < row_floats_; ++j) {
    const uint64_t bits = SplitMix64(base + static_cast<uint64_t>(j));
    // The top 24 bits: a float in [0, 1) exactly.
    const double u = static_cast<double>(bits >> 40) * 0x1p-24;
    row[j] = static_cast<float>(u * init_scale_);
    row[row_floats_ + j] = 0.0f;
  }
}

const float* FactorTable::Find(uint64_t key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : rows_.data() + it->second * stride_;
}

float* FactorTable::Find(uint64_t key) {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : rows_.data() + it->second * stride_;
}

float* FactorTable::FindOrInsert(uint64_t key) {
  auto [it, inserted] = index_.try_emplace(key, 0);
  if (inserted) {
    if (!free_.empty()) {
      it->second = free_.back();
      free_.pop_back();
    } else {
      it->second = static_cast<uint32_t>(rows_.size() / stride_);
      if (rows_.size() + stride_ > rows_.capacity() && max_rows_ != SIZE_MAX) {
        // Grow geometrically, but never past max_rows (the budget's).
        const size_t rows = std::max<size_t>(rows_.size() / stride_ + 1,
                                             std::min(max_rows_, 2 * (rows_.capacity() / stride_)));
        rows_.reserve(rows * stride_);
      }
      rows_.resize(rows_.size() + stride_);
    }
    factorization_.InitialRow(key, rows_.data() + it->second * stride_);
  }
  return rows_.data() + it->second * stride_;
}

void FactorTable::Clear() {
  index_.clear();
  rows_.clear();
  free_.clear();
}

void FactorTable::Assign(uint64_t key, const float* row) {
  std::copy(row, row + stride_, FindOrInsert(key));
}

void FactorTable::Erase(uint64_t key) {
  auto it = index_.find(key);
  if (it == index_.end()) return;
  free_.push_back(it->second);
  index_.erase(it);
}

}  // namespace clickd
