// The models a starting clickd serves: those restored from --data_dir
// (with what recovery found, on stdout) and those --config declares.
#ifndef CLICKD_SERVER_MODEL_STARTUP_H_
#define CLICKD_SERVER_MODEL_STARTUP_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/model/model_config.h"
#include "core/serving/registry.h"
#include "core/serving/served_model.h"

namespace clickd {

// Restores the models of the registry's data directory and says what it
// found: skipped damaged snapshots, salvaged or torn logs, replay counts.
absl::Status RecoverModels(ModelRegistry* registry);

// Creates each configured model the data directory did not restore (a
// restored model, with what it learned, wins over a fresh one).
absl::Status LoadModels(ModelRegistry* registry, const std::vector<ModelConfig>& configs);

// Logs a snapshot attempt: the sequence, size and time, or the error.
void LogSnapshot(const ServedModel& model, const absl::StatusOr<SnapshotReport>& result);

}  // namespace clickd

#endif  // CLICKD_SERVER_MODEL_STARTUP_H_
