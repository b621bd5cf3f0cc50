#include "server/snapshotter.h"

#include <sys/resource.h>
#include <unistd.h>

#include <iostream>

namespace clickd {
namespace {

// Lowers the calling thread's CPU priority (Linux: nice is per thread).
// Not SCHED_IDLE: a snapshot holds the model's learn lock while it copies
// the state, and at idle priority a busy CPU would stall updates behind it.
void LowerThreadPriority() {
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10) != 0) {
    std::cerr << "clickd: cannot lower the snapshot thread's priority; snapshots compete "
                 "with requests for CPU"
              << std::endl;
  }
}

}  // namespace

Snapshotter::Snapshotter(ModelRegistry* registry, std::chrono::milliseconds interval)
    : registry_(registry), interval_(interval) {
  thread_ = std::thread([this] { Loop(); });
}

Snapshotter::~Snapshotter() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_cv_.SignalAll();
  thread_.join();
  // The worker is gone; nobody else touches jobs_ now.
  std::deque<Job> left;
  {
    MutexLock lock(&mu_);
    left.swap(jobs_);
  }
  for (Job& job : left) job.done(absl::CancelledError("the server is stopping"));
}

void Snapshotter::SnapshotAsync(std::shared_ptr<ServedModel> model, Done done) {
  {
    MutexLock lock(&mu_);
    jobs_.push_back({std::move(model), std::move(done)});
  }
  wake_cv_.SignalAll();
}

int Snapshotter::SnapshotChanged() {
  int failures = 0;
  for (const std::shared_ptr<ServedModel>& served : registry_->List()) {
    if (!served->durable() || served->journal()->records_since_snapshot() == 0) continue;
    absl::StatusOr<SnapshotReport> result = served->Snapshot();
    // A model deleted meanwhile refuses with FailedPrecondition: not a failure.
    if (!result.ok() && registry_->Get(served->name()) != served) continue;
    failures += !result.ok();
  }
  return failures;
}

void Snapshotter::Loop() {
  LowerThreadPriority();
  using Clock = std::chrono::steady_clock;
  const bool periodic = interval_.count() > 0;
  Clock::time_point next = Clock::now() + interval_;
  for (;;) {
    Job job;
    bool run_periodic = false;
    {
      MutexLock lock(&mu_);
      while (!stopping_ && jobs_.empty() && (!periodic || Clock::now() < next)) {
        if (periodic) {
          wake_cv_.WaitFor(&mu_, next - Clock::now());
        } else {
          wake_cv_.Wait(&mu_);
        }
      }
      if (stopping_) return;
      if (!jobs_.empty()) {
        job = std::move(jobs_.front());
        jobs_.pop_front();
      } else {
        run_periodic = true;
        next = Clock::now() + interval_;
      }
    }
    if (run_periodic) {
      SnapshotChanged();
    } else {
      job.done(job.model->Snapshot());
    }
  }
}

}  // namespace clickd
