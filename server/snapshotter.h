// Snapshotter: writes the durable models' snapshots in the background:
// periodic ones every `interval` (of each model whose update log has grown
// since its last snapshot) and on-demand ones (SnapshotModel) queued to one
// worker thread. The worker reads each model's shards at normal priority
// (it takes the shards' locks in turn, and a learner may be waiting for
// one); the sort, the encoding and the write, which take no lock, run on a
// second thread at low CPU priority (nice +10), so that a snapshot of a
// large model takes CPU from Predict only when Predict leaves some.
// Graceful shutdown snapshots on the calling thread instead.
//
// Thread safety: safe for concurrent use. Snapshots of one model serialize
// in its journal.
#ifndef CLICKD_SERVER_SNAPSHOTTER_H_
#define CLICKD_SERVER_SNAPSHOTTER_H_

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/base/background_thread.h"
#include "core/base/mutex.h"
#include "core/serving/registry.h"

namespace clickd {

class Snapshotter {
 public:
  using Done = std::function<void(absl::StatusOr<SnapshotReport>)>;

  // Starts the worker thread; periodic snapshots unless `interval` is zero.
  Snapshotter(ModelRegistry* registry, std::chrono::milliseconds interval);
  // Stops the worker after the job in progress; queued jobs get Cancelled.
  ~Snapshotter();

  // Queues a snapshot of `model`; `done` runs on the worker thread.
  void SnapshotAsync(std::shared_ptr<ServedModel> model, Done done);

  // Snapshots, on the calling thread, every durable model with log records
  // after its newest snapshot. Returns how many snapshots failed.
  int SnapshotChanged();

 private:
  struct Job {
    std::shared_ptr<ServedModel> model;
    Done done;
  };

  void Loop();
  int SnapshotChangedWith(BackgroundThread* background);

  ModelRegistry* const registry_;
  const std::chrono::milliseconds interval_;
  BackgroundThread low_priority_;  // the worker's snapshots encode and write here
  Mutex mu_;
  CondVar wake_cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<Job> jobs_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace clickd

#endif  // CLICKD_SERVER_SNAPSHOTTER_H_
