// OptimizerConfig: which optimizer a model uses and its hyperparameters,
// named as in each optimizer's source. Defaults are pinned in
// optimizer_config_test.cc. pa and cw are binary classifiers (loss hinge
// only, checked by ValidateModelConfig); the others minimise the model's loss.
#ifndef CLICKD_CORE_OPTIM_OPTIMIZER_CONFIG_H_
#define CLICKD_CORE_OPTIM_OPTIMIZER_CONFIG_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/optim/adagrad.h"
#include "core/optim/box_ogd.h"
#include "core/optim/cw.h"
#include "core/optim/ftrl.h"
#include "core/optim/metagrad_diag.h"
#include "core/optim/pa.h"
#include "core/optim/sgd.h"

namespace clickd {

// Snapshots store the numeric value: append new types at the end.
enum class OptimizerType {
  kFtrl,
  kAdagrad,
  kAdagradDa,
  kPcOgd,
  kGlobalOgd,
  kSgd,
  kPa,
  kCw,
  kMetaGradDiag,
  // A dense learner over the whole (folded) feature space: the model's
  // dense_optimizer names it (core/model/dense_model.h). Not named here:
  // the API and clickctl take the dense learner's name as the optimizer
  // (SetOptimizerName in core/model/model_config.h).
  kDense,
};

// Names as used by the API and `clickctl replay --optimizer=` (kDense:
// "dense", which ParseOptimizerType does not take).
absl::StatusOr<OptimizerType> ParseOptimizerType(std::string_view name);
std::string_view OptimizerTypeName(OptimizerType type);

struct OptimizerConfig {
  OptimizerType type = OptimizerType::kFtrl;
  FtrlParams ftrl;
  AdagradParams adagrad;  // used by both kAdagrad and kAdagradDa
  PcOgdParams pc_ogd;
  GlobalOgdParams global_ogd;
  SgdParams sgd;
  PaParams pa;
  CwParams cw;
  MetaGradDiagParams metagrad_diag;
};

// True for the binary classifiers (pa, cw), which take loss hinge only.
bool IsBinaryClassifier(OptimizerType type);

// Checks every optimizer's hyperparameters, selected or not: finite, of the
// sign each formula needs (cw.eta: in (0.5, 1)) and within the ranges of
// core/optim/numeric_bounds.h (docs/optimizers.md, "Numeric bounds").
// Errors name the field and the limit.
absl::Status ValidateOptimizerConfig(const OptimizerConfig& config);

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_OPTIMIZER_CONFIG_H_
