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
// restored model, with what it learned, wins over a fresh one), within
// `max_models` with the restored ones: when they do not fit, the implicit
// default model (`implicit_default`: configs' last, not declared by
// --config) is left out, and if they still do not fit, nothing is created
// (InvalidArgument naming the counts and --max_models). Restored models
// above `max_models` are all served, with a log line: only creates are
// refused. A create that fails removes the models created before it, so
// that a failed start leaves no directories behind.
absl::Status LoadModels(ModelRegistry* registry, const std::vector<ModelConfig>& configs,
                        uint64_t max_models, bool implicit_default);

// Logs a snapshot attempt: the sequence, size and time, or the error.
void LogSnapshot(const ServedModel& model, const absl::StatusOr<SnapshotReport>& result);

}  // namespace clickd

#endif  // CLICKD_SERVER_MODEL_STARTUP_H_
