// Snapshots: one model's config and learned state at one point of its
// update log, in the format of docs/snapshot_format.md.
//
// Writing publishes atomically (temp file, sync, rename, directory sync).
// Reading checks everything (magic, format version, every CRC32C, counts,
// the footer, no trailing bytes) and returns DataLoss for a corrupt or
// truncated file, FailedPrecondition for a newer format version; it never
// returns a partially loaded state. Pure functions over an Env.
#ifndef CLICKD_CORE_PERSIST_SNAPSHOT_H_
#define CLICKD_CORE_PERSIST_SNAPSHOT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/model/model.h"
#include "core/model/model_config.h"
#include "core/persist/env.h"
// The config encoding shared by snapshots and the update log's header
// (EncodeModelConfig, DecodeModelConfig), kept reachable from here.
#include "core/persist/model_config_codec.h"  // IWYU pragma: export

namespace clickd {

// The newest format this build reads and writes; a model is written in the
// oldest version that holds it: 2, 3 with variants, 4 with an
// impression-to-click loop, idempotency keys or an online calibration.
inline constexpr uint32_t kSnapshotFormatVersion = 4;

struct SnapshotContents {
  ModelConfig config;
  // Sequence number of the last update-log record the state contains.
  uint64_t log_sequence = 0;
  Model::State state;
  // The impression join buffer (FeedbackLoop::EncodeState) of a model whose
  // config.feedback is enabled(); empty otherwise.
  std::string feedback;
  // The idempotency keys within their window (IdempotencyWindow::Encode),
  // or empty when none is held.
  std::string idempotency;
  // The online calibration (OnlineCalibrator::Serialize) of a model whose
  // config.calibration is enabled; empty otherwise, and in snapshots
  // written before it was kept. Written only with the config enabled.
  std::string calibration;
};

absl::Status WriteSnapshot(Env* env, const std::string& path, const SnapshotContents& contents);
absl::StatusOr<SnapshotContents> ReadSnapshot(Env* env, const std::string& path);

// The same format in memory (the writer streams the same bytes to disk).
std::string EncodeSnapshot(const SnapshotContents& contents);
absl::StatusOr<SnapshotContents> DecodeSnapshot(std::string_view bytes);

}  // namespace clickd

#endif  // CLICKD_CORE_PERSIST_SNAPSHOT_H_
