#include "server/stream_idle.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace clickd {
namespace {

// True on the watch's thread while it calls TryCancel.
thread_local bool cancelling_here = false;

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

StreamIdleWatch::Registration::Registration(Registration&& other) noexcept
    : watch_(std::exchange(other.watch_, nullptr)), entry_(std::move(other.entry_)) {}

StreamIdleWatch::Registration& StreamIdleWatch::Registration::operator=(
    Registration&& other) noexcept {
  if (this != &other) {
    Release();
    watch_ = std::exchange(other.watch_, nullptr);
    entry_ = std::move(other.entry_);
  }
  return *this;
}

void StreamIdleWatch::Registration::Waiting() {
  // Never 0, which means working.
  if (entry_ != nullptr) entry_->waiting_since.store(std::max<int64_t>(NowNanos(), 1));
}

void StreamIdleWatch::Registration::Working() {
  if (entry_ != nullptr) entry_->waiting_since.store(0);
}

void StreamIdleWatch::Registration::Release() {
  if (entry_ == nullptr) return;
  if (cancelling_here) {
    entry_->gone.store(true);  // the watch, which holds its lock, removes it
  } else {
    watch_->Remove(entry_.get());
  }
  entry_.reset();
  watch_ = nullptr;
}

StreamIdleWatch::StreamIdleWatch(std::chrono::milliseconds timeout)
    : timeout_(timeout), thread_([this] { Run(); }) {}

StreamIdleWatch::~StreamIdleWatch() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  stop_cv_.SignalAll();
  thread_.join();
}

StreamIdleWatch::Registration StreamIdleWatch::Watch(grpc::ServerContextBase* context) {
  auto entry = std::make_shared<Entry>();
  entry->context = context;
  MutexLock lock(&mu_);
  entries_.emplace(entry.get(), entry);
  return Registration(this, std::move(entry));
}

void StreamIdleWatch::Remove(Entry* entry) {
  MutexLock lock(&mu_);
  entries_.erase(entry);
}

void StreamIdleWatch::CheckIdle() {
  const int64_t now = NowNanos();
  const int64_t timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout_).count();
  std::vector<Entry*> gone;
  for (auto& [key, entry] : entries_) {
    if (entry->gone.load()) {
      gone.push_back(key);
      continue;
    }
    const int64_t since = entry->waiting_since.load();
    if (entry->cancelled || since == 0 || now - since <= timeout) continue;
    entry->cancelled = true;
    cancelling_here = true;
    entry->context->TryCancel();
    cancelling_here = false;
    cancelled_.fetch_add(1, std::memory_order_relaxed);
  }
  // Destructors run inside TryCancel above only flagged their entries.
  for (auto& [key, entry] : entries_) {
    if (entry->gone.load()) gone.push_back(key);
  }
  for (Entry* key : gone) entries_.erase(key);
}

void StreamIdleWatch::Run() {
  const auto period = std::clamp<std::chrono::milliseconds>(
      timeout_ / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  MutexLock lock(&mu_);
  while (!stop_) {
    stop_cv_.WaitFor(&mu_, period);
    if (!stop_) CheckIdle();
  }
}

}  // namespace clickd
