// Executor: the fixed pool of worker threads on which the service runs the
// model work of every call, so that gRPC's callback threads only move bytes
// (read a request, hand it over, write a response) and one busy or locked
// model never delays a health check, another model, or a cheap call on the
// same model.
//
//   * A fixed number of workers (--worker_threads) take tasks from one FIFO
//     ready queue.
//   * The queue is bounded (--max_queued_calls): Submit refuses a task
//     beyond it at once, with RESOURCE_EXHAUSTED "server overloaded: N calls
//     queued; the limit is M", instead of queueing without bound.
//   * A task may carry a key (the model's name, for the work that can wait
//     on a model's locks: learning, state digests, deletes). At most
//     max_running_per_key tasks of one key are ready or running at once; a
//     further one waits in its key's own queue, holding no worker, and
//     enters the ready queue when one of its key finishes. With the cap below
//     the number of workers, one model's learners never take every worker.
//     Keyless tasks (Predict, GetModel, ...) go straight to the ready queue.
//   * Close (at shutdown, once the grace period is over) refuses later
//     tasks and cancels queued ones: their `cancel` runs instead of `run`,
//     so that their calls finish (UNAVAILABLE) rather than hang. Running
//     tasks go on; the process may exit without waiting for them.
//
// Every submitted task gets exactly one of run() (on a worker) or
// cancel(status) (on the thread that calls Close or destroys the executor).
//
// Thread safety: safe for concurrent use. The destructor closes the
// executor and joins the workers, so it waits for running tasks.
#ifndef CLICKD_SERVER_EXECUTOR_H_
#define CLICKD_SERVER_EXECUTOR_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "core/base/mutex.h"

namespace clickd {

struct ExecutorOptions {
  int threads = 2;
  // Tasks waiting (ready or in a key's queue), not counting running ones.
  size_t max_queued = 1024;
  int max_running_per_key = 1;
};

class Executor {
 public:
  struct Task {
    std::function<void()> run;
    // Called instead of run if the executor closes first; may be null.
    std::function<void(const absl::Status&)> cancel;
    // Short work of bounded cost (a small Update or stream message): it does not
    // make its key heavy (KeyIsLight).
    bool light = false;
  };

  explicit Executor(ExecutorOptions options);
  ~Executor();

  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues `task` (see the header comment for `key`; empty: no key).
  // ResourceExhausted when the queue is full, Unavailable once closed: the
  // task is then dropped, neither run nor cancelled.
  absl::Status Submit(std::string_view key, Task task);

  // Waits until nothing is queued or running, or until `deadline`; returns
  // whether the executor is idle.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);

  // Refuses every later Submit with `reason` (an Unavailable status) and
  // cancels the queued tasks with it. Running tasks go on.
  void Close(const absl::Status& reason);

  // Whether the executor is open and no task of `key` that is not light
  // is queued or running. The service learns a small update on the
  // gRPC thread only then (ClickdService::PlaceUpdate), so that it does not
  // wait there behind a long call on the same model.
  bool KeyIsLight(std::string_view key) const;

  // Marks the start of a shutdown (before the grace period): long work
  // that can stop between steps (GetModel's state_digest) asks draining()
  // and stops, so that its call ends and the drain does not wait for it.
  void BeginDrain() { draining_.store(true, std::memory_order_relaxed); }
  bool draining() const { return draining_.load(std::memory_order_relaxed); }

  size_t queued() const;
  size_t running() const;
  // Nothing queued or running now (one lock, for a caller deciding whether
  // the workers would be waiting anyway).
  bool idle() const;
  const ExecutorOptions& options() const { return options_; }

 private:
  struct Queued {
    std::string key;
    Task task;
  };

  void WorkerLoop();
  void RunGuarded(Queued& next);
  // After a task of `key` (light or not) finished: moves the key's next
  // task, if any, to the ready queue.
  void AdmitNext(const std::string& key, bool finished_light) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ExecutorOptions options_;
  mutable Mutex mu_;
  // Workers wait on work_: one is woken per task made ready, so that a
  // submit does not wake every idle worker only for all but one to go back
  // to sleep (on a loaded core that herd cost a fifth of a stream's CPU).
  // WaitIdle waits on idle_, signalled when nothing is queued or running.
  CondVar work_;
  CondVar idle_;
  std::deque<Queued> ready_ ABSL_GUARDED_BY(mu_);
  // Per key: tasks ready or running (admitted), those waiting, and how
  // many of both are not light.
  struct KeyState {
    int admitted = 0;
    int heavy = 0;
    std::deque<Task> waiting;
  };
  absl::flat_hash_map<std::string, KeyState> keys_ ABSL_GUARDED_BY(mu_);
  size_t queued_ ABSL_GUARDED_BY(mu_) = 0;  // ready + waiting
  size_t running_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status closed_ ABSL_GUARDED_BY(mu_);  // OK while open
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> draining_{false};
  std::vector<std::thread> workers_;
};

}  // namespace clickd

#endif  // CLICKD_SERVER_EXECUTOR_H_
