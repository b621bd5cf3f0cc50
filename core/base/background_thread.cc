#include "core/base/background_thread.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <utility>

namespace clickd {

BackgroundThread::BackgroundThread(int nice_increment)
    : thread_([this, nice_increment] { Loop(nice_increment); }) {}

BackgroundThread::~BackgroundThread() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  changed_.SignalAll();
  thread_.join();
}

void BackgroundThread::Run(absl::FunctionRef<void()> fn) {
  MutexLock one(&one_caller_);
  MutexLock lock(&mu_);
  job_ = &fn;
  job_done_ = false;
  changed_.SignalAll();
  while (!job_done_) changed_.Wait(&mu_);
  job_ = nullptr;
  if (job_error_ != nullptr) std::rethrow_exception(std::exchange(job_error_, nullptr));
}

bool BackgroundThread::lowered() const {
  MutexLock lock(&mu_);
  while (!started_) changed_.Wait(&mu_);
  return lowered_;
}

void BackgroundThread::Loop(int nice_increment) {
  // getpriority may return -1 as a valid value: errno tells them apart.
  errno = 0;
  const int current = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  const bool lowered = errno == 0 && setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()),
                                                 current + nice_increment) == 0;
  {
    MutexLock lock(&mu_);
    started_ = true;
    lowered_ = lowered;
  }
  changed_.SignalAll();
  for (;;) {
    const absl::FunctionRef<void()>* job = nullptr;
    {
      MutexLock lock(&mu_);
      while (!stopping_ && (job_ == nullptr || job_done_)) changed_.Wait(&mu_);
      if (stopping_) return;
      job = job_;  // valid until its Run sees job_done_
    }
    // An exception (std::bad_alloc) is Run's caller's to handle: leaving
    // this thread it would abort the process.
    std::exception_ptr error;
    try {
      (*job)();
    } catch (...) {
      error = std::current_exception();
    }
    {
      MutexLock lock(&mu_);
      job_error_ = error;
      job_done_ = true;
    }
    changed_.SignalAll();
  }
}

}  // namespace clickd
