// AsyncPublisher: publishes records to the log stream without waiting for
// JetStream's acknowledgement; each one's outcome comes later, to a
// callback.
//
// A replicated Update used to hold an executor worker for its whole
// publish-and-apply (two round trips through NATS and a wait for the
// applier), so with a few writers per replica the workers, not the
// machine, bounded throughput, and Predicts queued behind waiting writers.
// With this, a worker sends the record and moves on; JetStream's
// acknowledgement arrives on nats.c's thread, and the call is answered
// from there or from the applier (replication/replica.h).
//
// It is nats.c's asynchronous publish (js_PublishMsgAsync) on a JetStream
// context of its own, whose acknowledgement handler finds the record's
// callback by the message pointer it was sent with. nats.c applies the
// timeout (a publish not acknowledged in time gets Unavailable). Every
// accepted publish gets exactly one call of its callback, unless Cancel
// ran first; a refused one (Publish returns an error) gets none.
//
// Thread safety: safe for concurrent use. Callbacks run on nats.c's
// thread, one at a time; Cancel waits for a running one to return, so a
// callback's owner may be destroyed once Cancel returned.
#ifndef CLICKD_REPLICATION_ASYNC_PUBLISHER_H_
#define CLICKD_REPLICATION_ASYNC_PUBLISHER_H_

#include <nats/nats.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "replication/jetstream_log.h"

namespace clickd {

class AsyncPublisher {
 public:
  using Done = std::function<void(absl::StatusOr<PublishAck>)>;

  // Publishes to `log`'s stream and subject over `log`'s connection.
  static absl::StatusOr<std::unique_ptr<AsyncPublisher>> Create(JetStreamLog* log);
  ~AsyncPublisher();

  AsyncPublisher(const AsyncPublisher&) = delete;
  AsyncPublisher& operator=(const AsyncPublisher&) = delete;

  // Sends `record` with `msg_id`; `done` later gets the acknowledgement,
  // or Unavailable if none came within `timeout`. An error here (too
  // large, not connected, cancelled) means nothing was sent and `done`
  // will not be called.
  absl::Status Publish(std::string_view record, const std::string& msg_id,
                       std::chrono::milliseconds timeout, Done done);

  // No callback runs after this returns; later publishes are refused.
  void Cancel();

 private:
  explicit AsyncPublisher(JetStreamLog* log) : log_(log) {}
  static void OnAck(jsCtx* js, natsMsg* msg, jsPubAck* ack, jsPubAckErr* error, void* closure);
  void Acknowledged(natsMsg* msg, jsPubAck* ack, jsPubAckErr* error);

  JetStreamLog* const log_;
  jsCtx* js_ = nullptr;

  Mutex mu_;
  CondVar idle_cv_;  // signalled when a callback returns
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  int running_ ABSL_GUARDED_BY(mu_) = 0;  // callbacks running now
  // Sent and not yet acknowledged, by the message nats.c owns meanwhile.
  absl::flat_hash_map<const natsMsg*, Done> pending_ ABSL_GUARDED_BY(mu_);
};

}  // namespace clickd

#endif  // CLICKD_REPLICATION_ASYNC_PUBLISHER_H_
