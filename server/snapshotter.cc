#include "server/snapshotter.h"

#include <iostream>
#include <new>

namespace clickd {

Snapshotter::Snapshotter(ModelRegistry* registry, std::chrono::milliseconds interval)
    : registry_(registry), interval_(interval), low_priority_(/*nice_increment=*/10) {
  if (!low_priority_.lowered()) {
    std::cerr << "clickd: cannot lower the snapshot encoder's priority; snapshots compete "
                 "with requests for CPU"
              << std::endl;
  }
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

int Snapshotter::SnapshotChanged() { return SnapshotChangedWith(nullptr); }

int Snapshotter::SnapshotChangedWith(BackgroundThread* background) {
  int failures = 0;
  for (const std::shared_ptr<ServedModel>& served : registry_->List()) {
    if (!served->durable() || served->journal()->records_since_snapshot() == 0) continue;
    absl::StatusOr<SnapshotReport> result = served->Snapshot(background);
    // A model deleted meanwhile refuses with FailedPrecondition: not a failure.
    if (!result.ok() && registry_->Get(served->name()) != served) continue;
    if (!result.ok()) {
      std::cerr << "clickd: periodic snapshot failed: " << result.status().message() << std::endl;
    }
    failures += !result.ok();
  }
  return failures;
}

void Snapshotter::Loop() {
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
    // Snapshot turns running out of memory into a failed snapshot; anything
    // else thrown here (a list of models that did not fit) fails this
    // round's work, not the process.
    try {
      if (run_periodic) {
        SnapshotChangedWith(&low_priority_);
      } else {
        job.done(job.model->Snapshot(&low_priority_));
        job.done = nullptr;
      }
    } catch (const std::bad_alloc&) {
      std::cerr << "clickd: out of memory in the snapshotter; its work failed, the server goes on"
                << std::endl;
      if (job.done) job.done(absl::ResourceExhaustedError("out of memory snapshotting"));
    }
  }
}

}  // namespace clickd
