// Snapshotter: writes snapshots of the durable models in the background,
// every `interval`, of each model whose update log has grown since its last
// snapshot; and on demand for all of them (at graceful shutdown).
//
// Thread safety: safe for concurrent use. Snapshots of one model serialize
// in its journal, so a periodic snapshot and a SnapshotModel call never
// interleave.
#ifndef CLICKD_SERVER_SNAPSHOTTER_H_
#define CLICKD_SERVER_SNAPSHOTTER_H_

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/model/registry.h"

namespace clickd {

class Snapshotter {
 public:
  // Called after every snapshot attempt (for the log and the metrics).
  using Observer =
      std::function<void(const ServedModel& model, const absl::StatusOr<SnapshotReport>& result)>;

  // Starts the background thread unless `interval` is zero.
  Snapshotter(ModelRegistry* registry, std::chrono::milliseconds interval, Observer observer);
  ~Snapshotter();  // stops the thread (a snapshot in progress finishes)

  // Snapshots every durable model with log records after its newest
  // snapshot. Returns how many snapshots failed.
  int SnapshotChanged();

 private:
  void Loop();
  // Sleeps one interval (less if stopped); false once stopping.
  bool WaitForNextRound();

  ModelRegistry* const registry_;
  const std::chrono::milliseconds interval_;
  const Observer observer_;
  Mutex mu_;
  CondVar stop_cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace clickd

#endif  // CLICKD_SERVER_SNAPSHOTTER_H_
