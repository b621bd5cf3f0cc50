// Mutex and its RAII lockers, annotated for clang's -Wthread-safety.
//
// Why not absl::Mutex: Debian's Abseil is a prebuilt library compiled
// without ThreadSanitizer, so TSan cannot see absl::Mutex's happens-before
// edges and reports false races. This wrapper uses std::shared_mutex
// (pthread_rwlock underneath, which TSan intercepts) and carries the same
// capability annotations, so both checkers see every lock.
#ifndef CLICKD_CORE_BASE_MUTEX_H_
#define CLICKD_CORE_BASE_MUTEX_H_

#include <condition_variable>
#include <shared_mutex>

#include "absl/base/thread_annotations.h"

namespace clickd {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() { mu_.lock_shared(); }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock_shared(); }

 private:
  friend class CondVar;
  std::shared_mutex mu_;
};

// A condition variable for Mutex (held exclusively while waiting).
class CondVar {
 public:
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { cv_.wait(mu->mu_); }
  // Returns false on timeout.
  template <typename Duration>
  bool WaitFor(Mutex* mu, Duration timeout) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return cv_.wait_for(mu->mu_, timeout) == std::cv_status::no_timeout;
  }
  // Wakes one waiter, if any.
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable_any cv_;
};

// Holds `mu` exclusively for the scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Holds `mu` shared for the scope.
class ABSL_SCOPED_LOCKABLE ReaderMutexLock {
 public:
  explicit ReaderMutexLock(Mutex* mu) ABSL_SHARED_LOCK_FUNCTION(mu) : mu_(mu) { mu_->ReaderLock(); }
  ~ReaderMutexLock() ABSL_UNLOCK_FUNCTION() { mu_->ReaderUnlock(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  Mutex* const mu_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_BASE_MUTEX_H_
