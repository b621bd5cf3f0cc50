// BackgroundThread: one thread at a lower CPU priority that runs closures
// for callers who wait for them.
//
// Why: a snapshot's copy takes each shard's lock in turn, and its sort,
// encoding and write take none. Run all of it on a low-priority thread and a
// busy core deschedules that thread while it holds a shard's lock, stalling
// every learner that needs the shard for as long (priority inversion). An
// unprivileged Linux thread cannot raise its priority back once lowered, so
// the caller copies at its own priority and hands the lock-free part to
// this thread.
//
// Thread safety: safe for concurrent use; Run calls are served one at a
// time, in no particular order.
#ifndef CLICKD_CORE_BASE_BACKGROUND_THREAD_H_
#define CLICKD_CORE_BASE_BACKGROUND_THREAD_H_

#include <exception>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "core/base/mutex.h"

namespace clickd {

class BackgroundThread {
 public:
  // Starts the thread, which adds `nice_increment` to its own nice value
  // (Linux: nice is per thread). If the system refuses, it runs at the
  // caller's priority and lowered() says so.
  explicit BackgroundThread(int nice_increment = 10);
  ~BackgroundThread();  // joins the thread

  BackgroundThread(const BackgroundThread&) = delete;
  BackgroundThread& operator=(const BackgroundThread&) = delete;

  // Runs fn on the thread and returns once it has returned; rethrows here
  // what fn threw.
  void Run(absl::FunctionRef<void()> fn);

  // Whether the thread's priority was lowered; known once the thread has
  // started (Run waits for that).
  bool lowered() const;

 private:
  void Loop(int nice_increment);

  Mutex one_caller_;  // held by a Run for its whole call
  mutable Mutex mu_;
  mutable CondVar changed_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool lowered_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  const absl::FunctionRef<void()>* job_ ABSL_GUARDED_BY(mu_) = nullptr;  // null: none pending
  bool job_done_ ABSL_GUARDED_BY(mu_) = false;
  std::exception_ptr job_error_ ABSL_GUARDED_BY(mu_);  // what the job threw
  std::thread thread_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_BASE_BACKGROUND_THREAD_H_
