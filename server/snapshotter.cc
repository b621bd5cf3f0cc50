#include "server/snapshotter.h"

namespace clickd {

Snapshotter::Snapshotter(ModelRegistry* registry, std::chrono::milliseconds interval,
                         Observer observer)
    : registry_(registry), interval_(interval), observer_(std::move(observer)) {
  if (interval_.count() > 0) thread_ = std::thread([this] { Loop(); });
}

Snapshotter::~Snapshotter() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  stop_cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

int Snapshotter::SnapshotChanged() {
  int failures = 0;
  for (const std::shared_ptr<ServedModel>& served : registry_->List()) {
    if (!served->durable() || served->journal()->records_since_snapshot() == 0) continue;
    absl::StatusOr<SnapshotReport> result = served->Snapshot();
    // A model deleted meanwhile refuses with FailedPrecondition: not a failure.
    if (!result.ok() && registry_->Get(served->name()) != served) continue;
    failures += !result.ok();
    if (observer_) observer_(*served, result);
  }
  return failures;
}

void Snapshotter::Loop() {
  while (WaitForNextRound()) SnapshotChanged();
}

bool Snapshotter::WaitForNextRound() {
  MutexLock lock(&mu_);
  if (!stopping_) stop_cv_.WaitFor(&mu_, interval_);
  return !stopping_;
}

}  // namespace clickd
