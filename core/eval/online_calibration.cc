#include "core/eval/online_calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/coding.h"
#include "core/base/crc32c.h"

namespace clickd {
namespace {

constexpr uint32_t kMagic = 0x4c41434b;  // "KCAL"
constexpr uint32_t kVersion = 1;
constexpr int kMaxNewtonSteps = 100;
constexpr int kMaxHalvings = 60;

// The bin of log p: kBins equal parts of [log kMinProbability, 0].
int BinOf(double log_p) {
  const double lo = std::log(OnlineCalibrator::kMinProbability);
  const int b = static_cast<int>(std::floor((log_p - lo) / -lo * OnlineCalibrator::kBins));
  return std::clamp(b, 0, OnlineCalibrator::kBins - 1);
}

// One bin for a fit: its weight, positives and mean log p.
struct Point {
  double w, y, l;
};

// The Poisson log-likelihood of E[y] = exp(a + k l), up to a constant.
double LogLikelihood(const std::vector<Point>& points, double a, double k) {
  double ll = 0;
  for (const Point& p : points) ll += p.y * (a + k * p.l) - p.w * std::exp(a + k * p.l);
  return ll;
}

// The a maximising the likelihood for a fixed k: log(sum y / sum w e^{k l}).
double InterceptFor(const std::vector<Point>& points, double k) {
  double y = 0, expected = 0;
  for (const Point& p : points) {
    y += p.y;
    expected += p.w * std::exp(k * p.l);
  }
  return std::log(y / expected);
}

absl::Status BadState(const std::string& what) {
  return absl::DataLossError(absl::StrCat("calibration state is corrupt: ", what));
}

}  // namespace

absl::Status ValidateOnlineCalibrationOptions(const OnlineCalibrationOptions& options) {
  if (!(options.half_life >= 1 && options.half_life <= 1e15)) {
    return absl::InvalidArgumentError(
        absl::StrCat("half_life is ", options.half_life, "; must be in [1, 1e15] examples"));
  }
  if (options.refit_every < 1) {
    return absl::InvalidArgumentError("refit_every is 0; must be at least 1 example");
  }
  if (!(options.min_positives >= 0 && std::isfinite(options.min_positives))) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_positives is ", options.min_positives, "; must be finite and >= 0"));
  }
  return absl::OkStatus();
}

OnlineCalibrator::OnlineCalibrator(const OnlineCalibrationOptions& options)
    : options_(options), decay_(std::exp2(-1.0 / options.half_life)) {}

absl::StatusOr<OnlineCalibrator> OnlineCalibrator::Create(const OnlineCalibrationOptions& options) {
  if (absl::Status s = ValidateOnlineCalibrationOptions(options); !s.ok()) return s;
  return OnlineCalibrator(options);
}

absl::Status OnlineCalibrator::Add(double p, double label, double weight) {
  if (!(p >= 0 && p <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("p is ", p, "; must be in [0, 1]"));
  }
  if (label != 0 && label != 1) {
    return absl::InvalidArgumentError(absl::StrCat("label is ", label, "; must be 0 or 1"));
  }
  if (!(weight >= 0 && std::isfinite(weight))) {
    return absl::InvalidArgumentError(
        absl::StrCat("weight is ", weight, "; must be finite and >= 0"));
  }
  const double log_p = std::log(std::max(p, kMinProbability));
  for (Bin& b : bins_) {
    b.weight *= decay_;
    b.positives *= decay_;
    b.log_p *= decay_;
  }
  Bin& bin = bins_[BinOf(log_p)];
  bin.weight += weight;
  bin.positives += weight * label;
  bin.log_p += weight * log_p;
  positives_ += weight * label;
  examples_ += 1;
  since_fit_ += 1;
  if (since_fit_ >= options_.refit_every && positives_ >= options_.min_positives &&
      positives_ > 0) {
    Fit();
    since_fit_ = 0;
  }
  return absl::OkStatus();
}

double OnlineCalibrator::Apply(double p) const {
  if (!(p >= 0 && p <= 1)) return std::numeric_limits<double>::quiet_NaN();
  if (!fitted_) return p;
  return std::clamp(gamma_ * std::pow(p, kappa_), kMinOutput, 1 - kMinOutput);
}

void OnlineCalibrator::Fit() {
  std::vector<Point> points;
  double total_y = 0;
  for (const Bin& b : bins_) {
    if (b.weight <= 0) continue;
    points.push_back({b.weight, b.positives, b.log_p / b.weight});
    total_y += b.positives;
  }
  // Forgotten down to nothing (or positives of weight 0): keep the last fit.
  if (!(total_y > 0)) return;
  double a = std::log(gamma_), k = kappa_;
  double ll = LogLikelihood(points, a, k);
  for (int step = 0; step < kMaxNewtonSteps; ++step) {
    // Gradient and negative Hessian of the log-likelihood in (a, k).
    double ga = 0, gk = 0, haa = 0, hak = 0, hkk = 0;
    for (const Point& p : points) {
      const double mu = p.w * std::exp(a + k * p.l);
      ga += p.y - mu;
      gk += p.l * (p.y - mu);
      haa += mu;
      hak += mu * p.l;
      hkk += mu * p.l * p.l;
    }
    const double det = haa * hkk - hak * hak;
    // All the mass at one log p: kappa is not identified; keep it.
    if (!(det > 1e-12 * haa * hkk)) break;
    const double da = (hkk * ga - hak * gk) / det, dk = (haa * gk - hak * ga) / det;
    double t = 1;
    int halvings = 0;
    double next = LogLikelihood(points, a + da, k + dk);
    while (!(next >= ll) && halvings < kMaxHalvings) {
      t *= 0.5;
      ++halvings;
      next = LogLikelihood(points, a + t * da, k + t * dk);
    }
    if (!(next >= ll)) break;
    a += t * da;
    k += t * dk;
    const bool converged = std::abs(t * da) + std::abs(t * dk) < 1e-12;
    ll = next;
    if (converged) break;
  }
  kappa_ = std::clamp(k, kMinKappa, kMaxKappa);
  gamma_ = std::exp(InterceptFor(points, kappa_));
  fitted_ = true;
}

std::string OnlineCalibrator::Serialize() const {
  std::string out;
  coding::PutFixed32(&out, kMagic);
  coding::PutFixed32(&out, kVersion);
  coding::PutDouble(&out, options_.half_life);
  coding::PutFixed64(&out, options_.refit_every);
  coding::PutDouble(&out, options_.min_positives);
  coding::PutFixed64(&out, examples_);
  coding::PutFixed64(&out, since_fit_);
  coding::PutDouble(&out, positives_);
  coding::PutFixed32(&out, fitted_ ? 1 : 0);
  coding::PutDouble(&out, gamma_);
  coding::PutDouble(&out, kappa_);
  coding::PutFixed32(&out, kBins);
  for (const Bin& b : bins_) {
    coding::PutDouble(&out, b.weight);
    coding::PutDouble(&out, b.positives);
    coding::PutDouble(&out, b.log_p);
  }
  crc32c::Seal(&out);
  return out;
}

absl::StatusOr<OnlineCalibrator> OnlineCalibrator::Deserialize(std::string_view bytes) {
  std::string_view body;
  if (!crc32c::Unseal(bytes, &body)) return BadState("checksum mismatch or truncated");
  coding::Decoder in(body);
  uint32_t magic = 0, version = 0, fitted = 0, bins = 0;
  if (!in.GetFixed32(&magic) || magic != kMagic) return BadState("not a calibration state");
  if (!in.GetFixed32(&version) || version != kVersion) return BadState("unknown version");
  OnlineCalibrationOptions options;
  if (!in.GetDouble(&options.half_life) || !in.GetFixed64(&options.refit_every) ||
      !in.GetDouble(&options.min_positives)) {
    return BadState("truncated options");
  }
  if (absl::Status s = ValidateOnlineCalibrationOptions(options); !s.ok()) {
    return BadState(std::string(s.message()));
  }
  OnlineCalibrator c(options);
  if (!in.GetFixed64(&c.examples_) || !in.GetFixed64(&c.since_fit_) ||
      !in.GetDouble(&c.positives_) || !in.GetFixed32(&fitted) || !in.GetDouble(&c.gamma_) ||
      !in.GetDouble(&c.kappa_) || !in.GetFixed32(&bins)) {
    return BadState("truncated");
  }
  if (!(c.positives_ >= 0 && std::isfinite(c.positives_)) || fitted > 1 ||
      !(c.gamma_ > 0 && std::isfinite(c.gamma_)) ||
      !(c.kappa_ >= kMinKappa && c.kappa_ <= kMaxKappa) || c.since_fit_ > c.examples_) {
    return BadState("a counter or the fit is out of range");
  }
  c.fitted_ = fitted == 1;
  if (bins != kBins) return BadState(absl::StrCat(bins, " bins; this build has ", kBins));
  for (Bin& b : c.bins_) {
    if (!in.GetDouble(&b.weight) || !in.GetDouble(&b.positives) || !in.GetDouble(&b.log_p)) {
      return BadState("truncated bins");
    }
    if (!(b.weight >= 0 && std::isfinite(b.weight)) ||
        !(b.positives >= 0 && b.positives <= b.weight) ||
        !(b.log_p <= 0 && std::isfinite(b.log_p))) {
      return BadState("a bin's sums are negative, inconsistent or not finite");
    }
  }
  if (!in.remaining().empty()) return BadState("trailing bytes");
  return c;
}

}  // namespace clickd
