#include "core/eval/metrics.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <random>

#include "core/optim/numeric_bounds.h"

namespace clickd {
namespace {

constexpr double kNaN = MetricsSummary::kNaN;
// Keeps log p and log(1 - p) finite in the logloss.
constexpr double kProbabilityClip = 1e-15;

// One example's contribution to every metric, already multiplied by its
// importance. Computed once per example so that a bootstrap resample, which
// only changes how often each example counts, needs no exp or log.
struct Term {
  double margin;
  double w;            // importance
  double w_pos;        // w * y01
  double w_loss;       // w * the model's own loss
  double w_logloss;    // logistic only
  double w_hinge;      // w * max(0, 1 - y m)
  double w_p;          // w * Sigmoid(margin), logistic only
  double w_squared;    // w * (prediction - label)^2
  double w_miss;       // w * [mistake]; for squared, with the threshold at 0
  double w_miss_half;  // squared only: w * [mistake] with the threshold at 0.5
  bool label01;        // label is exactly 0 or 1
  bool positive;       // label > 0
  uint32_t index;      // position in the caller's vector
};

// Returns w * [mistake] for a classifier that says positive iff margin >
// threshold.
double WeightedMiss(double w, double margin, bool positive, double threshold) {
  return (margin > threshold) != positive ? w : 0.0;
}

// Returns w * [margin * y <= 0]: a zero margin sides with neither class, so
// it is a mistake whatever the label.
double WeightedSignMiss(double w, double margin, double label) {
  return margin * SignedLabel(label) <= 0 ? w : 0.0;
}

// Returns `t` with the fields that depend on the loss type filled in.
Term WithLossTerms(LossType loss, const ScoredExample& e, Term t) {
  const double m = t.margin;
  const double w = t.w;
  const double y01 = t.positive ? 1.0 : 0.0;
  t.w_loss = w * Loss(loss, m, e.label);
  if (loss == LossType::kLogistic) {
    const double p = Sigmoid(m);
    const double pc = std::clamp(p, kProbabilityClip, 1.0 - kProbabilityClip);
    t.w_logloss = -w * (y01 * std::log(pc) + (1.0 - y01) * std::log(1.0 - pc));
    t.w_p = w * p;
    t.w_squared = w * (p - y01) * (p - y01);
    t.w_miss = WeightedSignMiss(w, m, e.label);
    return t;
  }
  t.w_squared = w * (m - e.label) * (m - e.label);
  if (loss == LossType::kHinge) {
    t.w_miss = WeightedSignMiss(w, m, e.label);
  } else {
    t.w_miss = WeightedMiss(w, m, t.positive, 0.0);
    t.w_miss_half = WeightedMiss(w, m, t.positive, 0.5);
  }
  return t;
}

Term MakeTerm(LossType loss, const ScoredExample& e, uint32_t index) {
  Term t{};
  t.margin = e.margin;
  t.w = e.importance;
  t.positive = e.label > 0;
  t.w_pos = t.positive ? t.w : 0.0;
  t.label01 = e.label == 0.0f || e.label == 1.0f;
  t.index = index;
  t.w_hinge = t.w * std::max(0.0, 1.0 - SignedLabel(e.label) * t.margin);
  t = WithLossTerms(loss, e, t);
  if (std::isnan(t.margin)) {
    // A diverged model has no loss and no side; comparisons and max() would
    // quietly turn a NaN margin into 0 or "not a mistake".
    t.w_loss = t.w_logloss = t.w_hinge = t.w_p = t.w_squared = kNaN;
    t.w_miss = t.w_miss_half = kNaN;
  }
  return t;
}

// Orders by margin, NaN margins last, so that the AUC is one sweep.
// std::sort needs a strict weak order, which NaN would break.
template <typename T>
void SortByMargin(std::vector<T>& v) {
  const auto nan_begin =
      std::partition(v.begin(), v.end(), [](const T& t) { return !std::isnan(t.margin); });
  std::sort(v.begin(), nan_begin, [](const T& a, const T& b) { return a.margin < b.margin; });
}

// SortByMargin for the 12-byte records of a whole replay: a stable LSD
// radix sort on the margin's bits (three passes of 11 bits), ~5x faster
// than std::sort at 2M records, where the sort was most of the learner's
// serial tail at the end of an offline replay. Ties may end up in another
// order than std::sort's, which the AUC sweep does not see (it groups
// equal margins; -0 and +0 sort next to each other and compare equal).
void SortScoredByMargin(std::vector<ScoredExample>& v) {
  const auto nan_begin = std::partition(
      v.begin(), v.end(), [](const ScoredExample& e) { return !std::isnan(e.margin); });
  const size_t n = static_cast<size_t>(nan_begin - v.begin());
  if (n < 1024) {
    std::sort(v.begin(), nan_begin,
              [](const ScoredExample& a, const ScoredExample& b) { return a.margin < b.margin; });
    return;
  }
  // A float's bits as an unsigned key in the float's order: negatives
  // flipped whole, positives with the sign bit set.
  auto key = [](const ScoredExample& e) {
    const uint32_t bits = std::bit_cast<uint32_t>(e.margin);
    return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
  };
  constexpr int kBits = 11;
  constexpr uint32_t kBuckets = 1u << kBits;
  std::vector<ScoredExample> scratch(n);
  ScoredExample* from = v.data();
  ScoredExample* to = scratch.data();
  for (int shift = 0; shift < 32; shift += kBits) {
    std::vector<size_t> start(kBuckets + 1, 0);
    for (size_t i = 0; i < n; ++i) ++start[((key(from[i]) >> shift) & (kBuckets - 1)) + 1];
    for (uint32_t b = 0; b < kBuckets; ++b) start[b + 1] += start[b];
    for (size_t i = 0; i < n; ++i) to[start[(key(from[i]) >> shift) & (kBuckets - 1)]++] = from[i];
    std::swap(from, to);
  }
  // Three passes end in the scratch buffer.
  if (from != v.data()) std::copy(from, from + n, v.data());
}

// The weighted Mann-Whitney statistic, fed in ascending margin order: each
// positive wins against the negative weight below its margin and half of the
// negative weight tied with it.
class AucSweep {
 public:
  void Add(double margin, double w, bool positive) {
    if (std::isnan(margin)) has_nan_ = true;
    if (margin != group_margin_) Flush(margin);
    (positive ? group_pos_ : group_neg_) += w;
  }

  double Finish() {
    Flush(kNaN);
    if (has_nan_ || total_pos_ <= 0 || total_neg_ <= 0) return kNaN;
    return wins_ / (total_pos_ * total_neg_);
  }

 private:
  void Flush(double next_margin) {
    wins_ += group_pos_ * (neg_below_ + 0.5 * group_neg_);
    neg_below_ += group_neg_;
    total_pos_ += group_pos_;
    total_neg_ = neg_below_;
    group_pos_ = group_neg_ = 0;
    group_margin_ = next_margin;
  }

  double group_margin_ = kNaN;
  double group_pos_ = 0, group_neg_ = 0;
  double neg_below_ = 0, total_pos_ = 0, total_neg_ = 0, wins_ = 0;
  bool has_nan_ = false;
};

// Adds a term to the sums, counted n times.
void AddTerm(const Term& t, uint32_t n, MetricSums* s) {
  const double count = n;
  s->examples += n;
  s->w += count * t.w;
  s->w_pos += count * t.w_pos;
  s->loss += count * t.w_loss;
  s->logloss += count * t.w_logloss;
  s->hinge += count * t.w_hinge;
  s->p += count * t.w_p;
  s->squared += count * t.w_squared;
  s->miss += count * t.w_miss;
  s->miss_half += count * t.w_miss_half;
  s->all_label01 = s->all_label01 && t.label01;
}

MetricsSummary ToSummary(LossType loss, const MetricSums& s, double auc) {
  MetricsSummary out;
  out.examples = s.examples;
  out.weight = s.w;
  if (s.examples == 0) return out;
  out.loss = s.loss / s.w;
  out.hinge = s.hinge / s.w;
  out.squared = s.squared / s.w;
  out.auc = auc;
  // A squared-loss model trained on 0/1 labels predicts the click rate, so
  // its decision threshold is 0.5 rather than 0.
  const bool half = loss == LossType::kSquared && s.all_label01;
  out.mistakes = (half ? s.miss_half : s.miss) / s.w;
  if (loss == LossType::kLogistic) {
    out.logloss = s.logloss / s.w;
    out.calibration = s.w_pos > 0 ? s.p / s.w_pos : kNaN;
  }
  return out;
}

// Summarises a resample given as how often each example was drawn; terms
// drawn zero times are skipped so that their NaNs cannot leak in.
MetricsSummary SummarizeResample(LossType loss, const std::vector<Term>& sorted_terms,
                                 const std::vector<uint32_t>& counts) {
  MetricSums sums;
  AucSweep auc;
  for (const Term& t : sorted_terms) {
    const uint32_t c = counts[t.index];
    if (c == 0) continue;
    AddTerm(t, c, &sums);
    auc.Add(t.margin, c * t.w, t.positive);
  }
  return ToSummary(loss, sums, auc.Finish());
}

// Returns the q-quantile by linear interpolation between order statistics
// (Hyndman and Fan type 7, numpy's default); NaN for no values.
double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return kNaN;
  const double h = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

// Returns the central `level` interval of the non-NaN values.
Interval PercentileInterval(std::vector<double>& values, double level) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
  std::sort(values.begin(), values.end());
  return Interval{Quantile(values, (1.0 - level) / 2), Quantile(values, (1.0 + level) / 2)};
}

// Draws one resample as a multiplicity per example: index = rng() % n, so
// the draws are the same on every platform (the modulo bias is below n/2^64).
void DrawCounts(std::mt19937_64& rng, std::vector<uint32_t>& counts) {
  std::fill(counts.begin(), counts.end(), 0);
  const uint64_t n = counts.size();
  for (uint64_t i = 0; i < n; ++i) ++counts[rng() % n];
}

}  // namespace

ProgressiveMetrics::ProgressiveMetrics(LossType loss) : loss_(loss) {}

void ProgressiveMetrics::Add(double margin, double label, double importance) {
  scored_.push_back(ScoredExample{ToFiniteFloat(margin), static_cast<float>(label),
                                  static_cast<float>(importance)});
}

MetricsSummary ProgressiveMetrics::Summary() const { return Summarize(loss_, scored_); }

MetricsSummary Summarize(LossType loss, const std::vector<ScoredExample>& scored) {
  // Streams the terms rather than storing them, so the only copy is the
  // 12-byte records for the AUC sort.
  MetricSums sums;
  for (const ScoredExample& e : scored) AddTerm(MakeTerm(loss, e, 0), 1, &sums);
  std::vector<ScoredExample> ranked = scored;
  SortScoredByMargin(ranked);
  AucSweep auc;
  for (const ScoredExample& e : ranked) auc.Add(e.margin, e.importance, e.label > 0);
  return ToSummary(loss, sums, auc.Finish());
}

StreamingMetrics::StreamingMetrics(LossType loss, int auc_bins)
    : loss_(loss), auc_bins_(std::max(1, auc_bins)) {}

void StreamingMetrics::AllocateBins() {
  if (!positive_weight_.empty()) return;
  positive_weight_.assign(auc_bins_, 0.0);
  negative_weight_.assign(auc_bins_, 0.0);
}

void StreamingMetrics::Add(double margin, double label, double importance) {
  const ScoredExample e{ToFiniteFloat(margin), static_cast<float>(label),
                        static_cast<float>(importance)};
  AddTerm(MakeTerm(loss_, e, 0), 1, &sums_);
  if (std::isnan(margin)) {
    saw_nan_margin_ = true;
    return;
  }
  const double scaled =
      (std::clamp(margin, -kAucRange, kAucRange) + kAucRange) / (2 * kAucRange) * auc_bins_;
  const int bin = std::min(auc_bins_ - 1, static_cast<int>(scaled));
  AllocateBins();
  (label > 0 ? positive_weight_ : negative_weight_)[bin] += importance;
}

bool StreamingMetrics::Merge(const StreamingMetrics& other) {
  if (other.loss_ != loss_ || other.auc_bins_ != auc_bins_) return false;
  const MetricSums& o = other.sums_;
  sums_.examples += o.examples;
  sums_.w += o.w;
  sums_.w_pos += o.w_pos;
  sums_.loss += o.loss;
  sums_.logloss += o.logloss;
  sums_.hinge += o.hinge;
  sums_.p += o.p;
  sums_.squared += o.squared;
  sums_.miss += o.miss;
  sums_.miss_half += o.miss_half;
  sums_.all_label01 = sums_.all_label01 && o.all_label01;
  if (!other.positive_weight_.empty()) AllocateBins();
  for (size_t b = 0; b < other.positive_weight_.size(); ++b) {
    positive_weight_[b] += other.positive_weight_[b];
    negative_weight_[b] += other.negative_weight_[b];
  }
  saw_nan_margin_ = saw_nan_margin_ || other.saw_nan_margin_;
  return true;
}

MetricsSummary StreamingMetrics::Summary() const {
  // The bins in ascending order are an AUC sweep whose groups are bins.
  AucSweep auc;
  double tied = 0, total_pos = 0, total_neg = 0;
  for (size_t b = 0; b < positive_weight_.size(); ++b) {
    const double pos = positive_weight_[b], neg = negative_weight_[b];
    if (pos == 0 && neg == 0) continue;
    auc.Add(b, pos, true);
    auc.Add(b, neg, false);
    tied += pos * neg;
    total_pos += pos;
    total_neg += neg;
  }
  MetricsSummary out = ToSummary(loss_, sums_, saw_nan_margin_ ? kNaN : auc.Finish());
  out.auc_error_bound =
      total_pos > 0 && total_neg > 0 ? 0.5 * tied / (total_pos * total_neg) : kNaN;
  return out;
}

BootstrapIntervals Bootstrap(LossType loss, const std::vector<ScoredExample>& scored, int resamples,
                             uint64_t seed, double level) {
  BootstrapIntervals out;
  if (scored.empty() || resamples <= 0 || !(level >= 0 && level <= 1)) return out;
  // Computing the terms and sorting once, then drawing multiplicities, gives
  // the same summary as Summarize on the materialised resample up to
  // summation order, without an exp, a log or a sort per resample.
  std::vector<Term> terms;
  terms.reserve(scored.size());
  for (size_t i = 0; i < scored.size(); ++i) {
    terms.push_back(MakeTerm(loss, scored[i], static_cast<uint32_t>(i)));
  }
  SortByMargin(terms);
  std::vector<uint32_t> counts(scored.size());
  std::mt19937_64 rng(seed);
  std::vector<double> logloss, auc, mean_loss, mistakes, calibration;
  for (int r = 0; r < resamples; ++r) {
    DrawCounts(rng, counts);
    const MetricsSummary s = SummarizeResample(loss, terms, counts);
    logloss.push_back(s.logloss);
    auc.push_back(s.auc);
    mean_loss.push_back(s.loss);
    mistakes.push_back(s.mistakes);
    calibration.push_back(s.calibration);
  }
  out.logloss = PercentileInterval(logloss, level);
  out.auc = PercentileInterval(auc, level);
  out.loss = PercentileInterval(mean_loss, level);
  out.mistakes = PercentileInterval(mistakes, level);
  out.calibration = PercentileInterval(calibration, level);
  return out;
}

}  // namespace clickd
