// StreamIdleWatch: ends streaming calls (UpdateStream, UpdateStreamAcked,
// FeedbackStream) whose caller has sent no complete message for
// --stream_idle_timeout_seconds while the server waited for one (issue 33,
// N10). Without it, --max_open_streams streams that send nothing refuse
// every other stream server-wide for as long as their callers keep them
// open. Time spent learning a message does not count: a stream is idle
// only between asking gRPC for the next message and getting it.
//
// A thread of the watch checks the registered streams every quarter of the
// timeout (at most every second) and cancels the idle ones
// (ServerContext::TryCancel: the caller sees CANCELLED, and the stream's
// place and buffers are freed).
//
// Thread safety: Watch, and Waiting/Working of different registrations,
// may be called from any thread. gRPC may run a cancelled stream's
// reactions, and its registration's destructor, inside TryCancel on the
// watch's own thread; the destructor then leaves the entry for the watch
// to remove instead of taking its lock.
#ifndef CLICKD_SERVER_STREAM_IDLE_H_
#define CLICKD_SERVER_STREAM_IDLE_H_

#include <grpcpp/server_context.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "core/base/mutex.h"

namespace clickd {

class StreamIdleWatch {
  struct Entry;

 public:
  // Streams idle longer than `timeout` are cancelled.
  explicit StreamIdleWatch(std::chrono::milliseconds timeout);
  // Stops the thread and joins it; every registration must be gone.
  ~StreamIdleWatch();
  StreamIdleWatch(const StreamIdleWatch&) = delete;
  StreamIdleWatch& operator=(const StreamIdleWatch&) = delete;

  // One stream's place under the watch, removed when destroyed. A new
  // registration is Working (not idle).
  class Registration {
   public:
    Registration() = default;
    Registration(Registration&& other) noexcept;
    Registration& operator=(Registration&& other) noexcept;
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    ~Registration() { Release(); }

    // The stream waits for its caller's next message (call before StartRead).
    void Waiting();
    // The stream got a message and works on it (call in OnReadDone).
    void Working();

   private:
    friend class StreamIdleWatch;
    Registration(StreamIdleWatch* watch, std::shared_ptr<Entry> entry)
        : watch_(watch), entry_(std::move(entry)) {}
    void Release();
    StreamIdleWatch* watch_ = nullptr;
    std::shared_ptr<Entry> entry_;
  };

  // Watches the stream of `context` (which must outlive the registration).
  Registration Watch(grpc::ServerContextBase* context) ABSL_LOCKS_EXCLUDED(mu_);

  // Streams cancelled for idleness since start.
  uint64_t cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    grpc::ServerContextBase* context = nullptr;
    // steady_clock nanoseconds since the stream started waiting; 0 while
    // it works on a message.
    std::atomic<int64_t> waiting_since{0};
    // Set by a destructor that ran inside TryCancel on the watch's thread.
    std::atomic<bool> gone{false};
    bool cancelled = false;  // guarded by the watch's mu_
  };

  void Remove(Entry* entry) ABSL_LOCKS_EXCLUDED(mu_);
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // Cancels the idle streams and drops the entries of finished ones.
  void CheckIdle() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::chrono::milliseconds timeout_;
  std::atomic<uint64_t> cancelled_{0};
  Mutex mu_;
  CondVar stop_cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<Entry*, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace clickd

#endif  // CLICKD_SERVER_STREAM_IDLE_H_
