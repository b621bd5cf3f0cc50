// OptimizerConfig: which per-coordinate optimizer a model uses and its
// hyperparameters, named as in each optimizer's source. Defaults are pinned
// in optimizer_config_test.cc.
#ifndef CLICKD_CORE_OPTIM_OPTIMIZER_CONFIG_H_
#define CLICKD_CORE_OPTIM_OPTIMIZER_CONFIG_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/optim/adagrad.h"
#include "core/optim/box_ogd.h"
#include "core/optim/ftrl.h"
#include "core/optim/sgd.h"

namespace clickd {

enum class OptimizerType { kFtrl, kAdagrad, kAdagradDa, kPcOgd, kGlobalOgd, kSgd };

// Names as used by the API and `clickctl replay --optimizer=`.
absl::StatusOr<OptimizerType> ParseOptimizerType(std::string_view name);
std::string_view OptimizerTypeName(OptimizerType type);

struct OptimizerConfig {
  OptimizerType type = OptimizerType::kFtrl;
  FtrlParams ftrl;
  AdagradParams adagrad;  // used by both kAdagrad and kAdagradDa
  PcOgdParams pc_ogd;
  GlobalOgdParams global_ogd;
  SgdParams sgd;
};

// Checks the selected optimizer's hyperparameters: finite, and positive or
// non-negative as each formula needs. Errors name the field and the limit.
absl::Status ValidateOptimizerConfig(const OptimizerConfig& config);

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_OPTIMIZER_CONFIG_H_
