// Loss functions of a linear margin m = w . x, and the label conventions.
//
// Logistic: labels 0/1 or -1/+1 (0 and -1 are both negative);
//           loss = log(1 + exp(-y m)) with y in {-1,+1}; prediction sigmoid(m).
// Squared:  any finite label; loss = (m - label)^2 / 2; prediction m.
// Hinge:    labels -1/+1 (0 is read as -1); loss = max(0, 1 - y m); prediction m.
// Each gradient is d loss / d m; the optimizer multiplies it by x_i and by
// the example's importance weight. All functions are pure.
#ifndef CLICKD_CORE_OPTIM_LOSS_H_
#define CLICKD_CORE_OPTIM_LOSS_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace clickd {

enum class LossType { kLogistic, kSquared, kHinge };

absl::StatusOr<LossType> ParseLossType(std::string_view name);
std::string_view LossTypeName(LossType type);

// Returns InvalidArgument naming `field` if `label` is outside the loss's domain.
absl::Status CheckLabel(LossType type, double label, std::string_view field);

// +1 for a positive label, -1 otherwise (logistic and hinge conventions).
inline double SignedLabel(double label) { return label > 0 ? 1.0 : -1.0; }

double Loss(LossType type, double margin, double label);
double LossGradient(LossType type, double margin, double label);
// The served prediction: a probability for logistic, the margin otherwise.
double Link(LossType type, double margin);

double Sigmoid(double margin);

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_LOSS_H_
