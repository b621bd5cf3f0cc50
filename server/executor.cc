#include "server/executor.h"

#include <algorithm>
#include <exception>
#include <iostream>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"

namespace clickd {

Executor::Executor(ExecutorOptions options) : options_(options) {
  const int threads = std::max(1, options_.threads);
  workers_.reserve(threads);
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

Executor::~Executor() {
  Close(absl::UnavailableError("the server is shutting down"));
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    work_.SignalAll();
  }
  for (std::thread& t : workers_) t.join();
}

absl::Status Executor::Submit(std::string_view key, Task task) {
  MutexLock lock(&mu_);
  if (!closed_.ok()) return closed_;
  if (queued_ >= options_.max_queued) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "server overloaded: ", queued_, " calls queued; the limit is ", options_.max_queued));
  }
  ++queued_;
  if (!key.empty()) {
    KeyState& state = keys_[std::string(key)];
    if (!task.light) ++state.heavy;
    if (state.admitted >= std::max(1, options_.max_running_per_key)) {
      state.waiting.push_back(std::move(task));
      return absl::OkStatus();
    }
    ++state.admitted;
  }
  ready_.push_back({std::string(key), std::move(task)});
  work_.Signal();
  return absl::OkStatus();
}

void Executor::AdmitNext(const std::string& key, bool finished_light) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  KeyState& state = it->second;
  --state.admitted;
  if (!finished_light) --state.heavy;
  if (!state.waiting.empty()) {
    ++state.admitted;
    ready_.push_back({key, std::move(state.waiting.front())});
    state.waiting.pop_front();
    work_.Signal();
  } else if (state.admitted == 0) {
    keys_.erase(it);
  }
}

// A task whose run throws (std::bad_alloc: out of memory) gets its cancel
// with the error instead, so that its call is answered, and the worker
// goes on: an exception leaving a thread would abort the process.
void Executor::RunGuarded(Queued& next) {
  absl::Status failed;
  try {
    next.task.run();
    return;
  } catch (const std::bad_alloc&) {
    failed = absl::ResourceExhaustedError("out of memory running the call");
  } catch (const std::exception& e) {
    failed = absl::InternalError(absl::StrCat("internal error running the call: ", e.what()));
  } catch (...) {
    failed = absl::InternalError("internal error running the call");
  }
  std::cerr << "clickd: " << failed.message() << "; the call failed, the server goes on"
            << std::endl;
  if (next.task.cancel) next.task.cancel(failed);
}

void Executor::WorkerLoop() {
  for (;;) {
    Queued next;
    {
      MutexLock lock(&mu_);
      while (ready_.empty() && !stopping_) work_.Wait(&mu_);
      if (ready_.empty()) return;  // stopping, nothing left
      next = std::move(ready_.front());
      ready_.pop_front();
      --queued_;
      ++running_;
    }
    if (next.task.run) RunGuarded(next);
    const bool light = next.task.light;
    next.task = Task();  // destroy the task's captures outside the lock
    MutexLock lock(&mu_);
    --running_;
    if (!next.key.empty()) AdmitNext(next.key, light);
    if (queued_ == 0 && running_ == 0) idle_.SignalAll();
  }
}

bool Executor::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(&mu_);
  while (queued_ > 0 || running_ > 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    idle_.WaitFor(&mu_, deadline - now);
  }
  return true;
}

void Executor::Close(const absl::Status& reason) {
  std::vector<Task> cancelled;
  {
    MutexLock lock(&mu_);
    if (closed_.ok()) closed_ = reason.ok() ? absl::UnavailableError("closed") : reason;
    for (Queued& q : ready_) cancelled.push_back(std::move(q.task));
    ready_.clear();
    for (auto& [key, state] : keys_) {
      for (Task& t : state.waiting) cancelled.push_back(std::move(t));
      state.waiting.clear();
    }
    // Running tasks find no state for their key when they finish (see
    // AdmitNext); nothing is admitted after a close.
    keys_.clear();
    queued_ = 0;
    if (running_ == 0) idle_.SignalAll();
  }
  for (Task& t : cancelled) {
    if (t.cancel) t.cancel(reason);
  }
}

bool Executor::KeyIsLight(std::string_view key) const {
  MutexLock lock(&mu_);
  if (!closed_.ok()) return false;
  const auto it = keys_.find(absl::string_view(key.data(), key.size()));
  return it == keys_.end() || it->second.heavy == 0;
}

size_t Executor::queued() const {
  MutexLock lock(&mu_);
  return queued_;
}

size_t Executor::running() const {
  MutexLock lock(&mu_);
  return running_;
}

bool Executor::idle() const {
  MutexLock lock(&mu_);
  return queued_ == 0 && running_ == 0;
}

}  // namespace clickd
