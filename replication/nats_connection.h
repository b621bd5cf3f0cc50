// NatsConnection: one connection to a NATS cluster and its JetStream
// context, with the reconnection policy replication needs, and the one place
// where nats.c's status codes become absl::Status.
//
// The connection retries forever (a replica outlives any NATS outage) and
// buffers nothing while disconnected: a publish made during an outage fails
// at once instead of being sent, unacknowledged, minutes later.
//
// Thread safety: nats.c connections and JetStream contexts are thread-safe;
// so is this wrapper.
#ifndef CLICKD_REPLICATION_NATS_CONNECTION_H_
#define CLICKD_REPLICATION_NATS_CONNECTION_H_

#include <nats/nats.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"

namespace clickd {

struct NatsConnectionOptions {
  // Comma-separated server URLs ("nats://10.0.0.1:4222,nats://10.0.0.2:4222").
  std::string urls;
  // A NATS credentials file (JWT + NKey seed); empty: none.
  std::string creds_file;
  // Shown by the servers in their connection lists.
  std::string name = "clickd";
  // Default wait for JetStream API requests and publish acknowledgements.
  std::chrono::milliseconds timeout{2000};
  // Whether the connection may move to servers the cluster announces
  // besides `urls` (NATS's default). false pins it to `urls`, as a client
  // that can reach only those must be.
  bool use_discovered_servers = true;
};

// "NATS JetStream <what>: <nats.c's text>[ (JetStream error N)]", Unavailable
// for connection trouble and timeouts, Internal otherwise.
absl::Status NatsError(natsStatus status, jsErrCode js_error, std::string_view what);
inline absl::Status NatsError(natsStatus status, std::string_view what) {
  return NatsError(status, static_cast<jsErrCode>(0), what);
}

class NatsConnection {
 public:
  // Starts connecting; returns at once even if no server answers yet (the
  // connection keeps retrying in the background).
  static absl::StatusOr<std::unique_ptr<NatsConnection>> Connect(
      const NatsConnectionOptions& options);
  ~NatsConnection();

  NatsConnection(const NatsConnection&) = delete;
  NatsConnection& operator=(const NatsConnection&) = delete;

  natsConnection* connection() const { return connection_; }
  jsCtx* jetstream() const { return js_; }
  bool connected() const { return callbacks_->connected.load(std::memory_order_relaxed); }
  // Bytes the servers accept in one message (0 until first connected).
  int64_t max_payload() const;
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  explicit NatsConnection(std::chrono::milliseconds timeout) : timeout_(timeout) {}
  // What nats.c's callbacks touch. nats.c delivers them on its own thread,
  // possibly after natsConnection_Close returned; the closed callback comes
  // last, so the destructor waits for it before freeing this (and leaks it
  // rather than free it early if it never comes).
  struct Callbacks {
    std::atomic<bool> connected{false};
    Mutex mu;
    CondVar closed_cv;
    bool closed ABSL_GUARDED_BY(mu) = false;
  };
  static void OnConnected(natsConnection* nc, void* callbacks);
  static void OnDisconnected(natsConnection* nc, void* callbacks);
  static void OnClosed(natsConnection* nc, void* callbacks);

  const std::chrono::milliseconds timeout_;
  natsOptions* options_ = nullptr;
  natsConnection* connection_ = nullptr;
  jsCtx* js_ = nullptr;
  Callbacks* const callbacks_ = new Callbacks;
};

}  // namespace clickd

#endif  // CLICKD_REPLICATION_NATS_CONNECTION_H_
