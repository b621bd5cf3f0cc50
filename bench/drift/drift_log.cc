#include "bench/drift/drift_log.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace clickd::drift {
namespace {

// Vocabulary size, Zipf exponent and the spread of true weights per field:
// from a handful of values seen in most examples (device, slot) to a long
// tail (ad, user) whose values are seen a few times each.
struct FieldSpec {
  uint32_t vocabulary;
  double zipf_s;
  double weight_sd;
};
constexpr FieldSpec kSpecs[kFields] = {
    {8, 0.8, 0.5},     {100, 1.0, 0.5},    {1000, 1.1, 0.6},
    {10000, 1.1, 0.6}, {50000, 1.05, 0.5}, {200000, 1.05, 0.4},
};
constexpr double kBiasLevels[2] = {-3.0, -2.2};  // click rates of roughly 5 % and 10 %

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

bool ParseDriftKind(std::string_view name, DriftKind* kind) {
  for (DriftKind k : {DriftKind::kStationary, DriftKind::kAbrupt, DriftKind::kGradual}) {
    if (name == DriftKindName(k)) {
      *kind = k;
      return true;
    }
  }
  return false;
}

std::string_view DriftKindName(DriftKind kind) {
  switch (kind) {
    case DriftKind::kStationary:
      return "stationary";
    case DriftKind::kAbrupt:
      return "abrupt";
    case DriftKind::kGradual:
      return "gradual";
  }
  return "unknown";
}

uint32_t DriftLog::Vocabulary(int field) { return kSpecs[field].vocabulary; }

DriftLog::DriftLog(const DriftLogOptions& options)
    : options_(options), state_(Mix(options.seed ^ 0x5EEDull)) {
  bias_ = kBiasLevels[0];
  for (int f = 0; f < kFields; ++f) {
    const FieldSpec& spec = kSpecs[f];
    Field& field = fields_[f];
    field.cdf.resize(spec.vocabulary);
    double sum = 0;
    for (uint32_t v = 0; v < spec.vocabulary; ++v) {
      sum += std::pow(v + 1.0, -spec.zipf_s);
      field.cdf[v] = sum;
    }
    for (double& c : field.cdf) c /= sum;
    field.weight.resize(spec.vocabulary);
    for (double& w : field.weight) w = spec.weight_sd * Gaussian();
    if (options_.kind == DriftKind::kGradual) {
      field.amplitude.resize(spec.vocabulary);
      field.phase.resize(spec.vocabulary);
      field.period.resize(spec.vocabulary);
      for (uint32_t v = 0; v < spec.vocabulary; ++v) {
        field.amplitude[v] = spec.weight_sd * std::abs(Gaussian());
        field.phase[v] = 2 * std::numbers::pi * Uniform();
        field.period[v] = static_cast<double>(options_.period) * (0.5 + Uniform());
      }
    }
  }
}

double DriftLog::Uniform() {
  state_ += 0x9E3779B97F4A7C15ull;
  return static_cast<double>(Mix(state_) >> 11) * 0x1.0p-53;
}

double DriftLog::Gaussian() {
  // Box-Muller from two uniforms; the second value is dropped for simplicity.
  const double u1 = std::max(Uniform(), 0x1.0p-53);
  const double u2 = Uniform();
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

void DriftLog::Redraw(uint64_t epoch) {
  bias_ = kBiasLevels[epoch % 2];
  for (int f = 0; f < kFields; ++f) {
    for (double& w : fields_[f].weight) {
      if (Uniform() < 0.5) w = kSpecs[f].weight_sd * Gaussian();
    }
  }
}

DriftExample DriftLog::Next() {
  if (options_.kind == DriftKind::kAbrupt && t_ > 0 && t_ % options_.period == 0) {
    Redraw(t_ / options_.period);
  }
  DriftExample e;
  double logit = bias_;
  if (options_.kind == DriftKind::kGradual) {
    // The bias oscillates between the two levels too, at the mean period.
    const double mid = (kBiasLevels[0] + kBiasLevels[1]) / 2;
    const double half = (kBiasLevels[1] - kBiasLevels[0]) / 2;
    logit = mid + half * std::sin(2 * std::numbers::pi * static_cast<double>(t_) /
                                  static_cast<double>(options_.period));
  }
  for (int f = 0; f < kFields; ++f) {
    const Field& field = fields_[f];
    const double u = Uniform();
    const uint32_t v = static_cast<uint32_t>(
        std::lower_bound(field.cdf.begin(), field.cdf.end(), u) - field.cdf.begin());
    e.values[f] = std::min<uint32_t>(v, kSpecs[f].vocabulary - 1);
    const uint32_t i = e.values[f];
    double w = field.weight[i];
    if (options_.kind == DriftKind::kGradual) {
      w += field.amplitude[i] *
           std::sin(2 * std::numbers::pi * static_cast<double>(t_) / field.period[i] +
                    field.phase[i]);
    }
    logit += w;
  }
  e.p = 1.0 / (1.0 + std::exp(-logit));
  e.label = Uniform() < e.p ? 1 : 0;
  ++t_;
  return e;
}

}  // namespace clickd::drift
