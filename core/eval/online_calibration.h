// OnlineCalibrator: a correction of predicted probabilities fitted online on
// progressive predictions (McMahan et al. 2013, "Ad Click Prediction",
// section 7): tau(p) = gamma * p^kappa, clamped into (0, 1), fitted by
// Poisson regression, E[y | p] = exp(log gamma + kappa log p), on statistics
// aggregated in kBins bins of log p over [kMinProbability, 1).
//
// Each bin keeps, with exponential forgetting by examples (every Add first
// multiplies all sums by 2^(-1 / half_life)), the weight, the weighted
// positives and the weighted sum of log p; a fit treats each bin's examples
// as sitting at their mean log p (the bins are 0.22 nats wide, so that costs
// well under 1 % of tau). A fit is Newton's method on the concave Poisson
// log-likelihood from the last fit, with step halving, and runs every
// refit_every examples once min_positives weighted positives have been added
// in total; until the first fit, Apply is the identity. Everything follows
// from the inputs and their order (no clock): the same stream gives the same
// bytes.
//
// Thread safety: externally synchronized, like ProgressiveMetrics: the owner
// guards Add, Apply and Serialize with its own lock.
#ifndef CLICKD_CORE_EVAL_ONLINE_CALIBRATION_H_
#define CLICKD_CORE_EVAL_ONLINE_CALIBRATION_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace clickd {

struct OnlineCalibrationOptions {
  double half_life = 1e6;        // examples; in [1, 1e15]
  uint64_t refit_every = 10000;  // examples; >= 1
  double min_positives = 100;    // weighted positives before the first fit; >= 0
  bool operator==(const OnlineCalibrationOptions&) const = default;
};

// InvalidArgument naming the field and its range.
absl::Status ValidateOnlineCalibrationOptions(const OnlineCalibrationOptions& options);

class OnlineCalibrator {
 public:
  static constexpr int kBins = 64;
  static constexpr double kMinProbability = 1e-6;
  // Apply's output lies in [kMinOutput, 1 - kMinOutput].
  static constexpr double kMinOutput = 1e-12;
  // The fitted kappa is kept within [kMinKappa, kMaxKappa].
  static constexpr double kMinKappa = 0.05;
  static constexpr double kMaxKappa = 20.0;

  // InvalidArgument for options ValidateOnlineCalibrationOptions refuses.
  static absl::StatusOr<OnlineCalibrator> Create(const OnlineCalibrationOptions& options);

  // Adds one progressive prediction p in [0, 1] (clamped into [kMinProbability,
  // 1) for binning) with its label, 0 or 1, and importance weight (finite,
  // >= 0). InvalidArgument, changing nothing, for a NaN or out-of-range p, a
  // label other than 0 or 1, or a NaN, infinite or negative weight.
  absl::Status Add(double p, double label, double weight = 1.0);

  // The calibrated probability: tau(p) clamped into [kMinOutput,
  // 1 - kMinOutput], or p itself before the first fit. NaN for a p that is
  // NaN or outside [0, 1].
  double Apply(double p) const;

  // True once a fit is in use.
  bool fitted() const { return fitted_; }
  double gamma() const { return gamma_; }
  double kappa() const { return kappa_; }
  uint64_t examples() const { return examples_; }
  // What it was created with (a restored one: what its bytes say).
  const OnlineCalibrationOptions& options() const { return options_; }

  // The options and the whole state, sealed with a CRC32C; Deserialize
  // returns a calibrator that continues exactly as this one would, or
  // DataLoss naming what is wrong with the bytes.
  std::string Serialize() const;
  static absl::StatusOr<OnlineCalibrator> Deserialize(std::string_view bytes);

 private:
  struct Bin {
    double weight = 0, positives = 0, log_p = 0;  // log_p: sum of weight * log p
  };

  explicit OnlineCalibrator(const OnlineCalibrationOptions& options);
  void Fit();

  OnlineCalibrationOptions options_;
  double decay_;  // 2^(-1 / half_life), from the options
  uint64_t examples_ = 0;
  uint64_t since_fit_ = 0;
  double positives_ = 0;  // weighted, lifetime (not forgotten)
  bool fitted_ = false;
  double gamma_ = 1, kappa_ = 1;
  std::array<Bin, kBins> bins_{};
};

}  // namespace clickd

#endif  // CLICKD_CORE_EVAL_ONLINE_CALIBRATION_H_
