// JetStreamLog: the replicated log, one JetStream stream that every replica
// publishes to and applies in sequence order.
//
// Publish returns once JetStream acknowledged the message, which it does
// after the stream's RAFT group (R replicas) has a quorum of copies: an
// acknowledged record survives the loss of any minority of NATS nodes. A
// message id makes a retried publish (ours, or a client's with the same
// idempotency key) land once within the stream's duplicate window.
//
// Reading is an ordered consumer (nats.c's: no acks, flow control and
// heartbeats, recreated by the library on a gap) starting at a sequence;
// the caller still checks that sequences follow each other and starts a new
// Reader at its next sequence whenever they do not.
//
// Replica (replica.h) is its one user: it publishes records, reads them
// back in order, asks the stream's state and purges below published
// snapshots. (It is not an UpdateLog, core/persist/update_log.h: a
// stream's sequences cannot be reset and its reads are a consumer, not a
// scan, so the seam's contract would be kept only in part.)
//
// Thread safety: safe for concurrent use; one Reader is used by one thread.
#ifndef CLICKD_REPLICATION_JETSTREAM_LOG_H_
#define CLICKD_REPLICATION_JETSTREAM_LOG_H_

#include <nats/nats.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "replication/nats_connection.h"

namespace clickd {

struct JetStreamLogOptions {
  std::string stream = "CLICKD_LOG";
  std::string subject = "clickd.clickd.log";
  // For a stream clickd creates; an existing stream is used as it is.
  int replicas = 3;
  std::chrono::seconds duplicate_window{120};
  // Largest record the stream accepts (it also cannot exceed the servers'
  // max_payload).
  int32_t max_record_bytes = 8 << 20;
  // false: Open fails with NotFound instead of creating a missing stream
  // (a read-only follower, such as an embedded replica, never creates one).
  bool create_if_missing = true;
};

struct StreamState {
  uint64_t first_sequence = 0;  // 0 for an empty stream
  uint64_t last_sequence = 0;
  uint64_t messages = 0;
  uint64_t bytes = 0;
  int replicas = 0;
  std::string leader;  // the server leading the stream's RAFT group
};

struct PublishAck {
  uint64_t sequence = 0;
  // The message id was seen within the duplicate window: nothing was
  // appended, `sequence` is the first copy's.
  bool duplicate = false;
};

// A delivered record as the applier reads it.
struct LogRecordView {
  uint64_t sequence = 0;
  std::string_view data;
  std::string_view msg_id;
  int64_t unix_nanos = 0;
  uint64_t pending = 0;
};

// The same, owning its bytes (what a test's rewrite returns).
struct OwnedLogRecord {
  uint64_t sequence = 0;
  std::string data;
  std::string msg_id;
  int64_t unix_nanos = 0;
  uint64_t pending = 0;
  LogRecordView view() const { return {sequence, data, msg_id, unix_nanos, pending}; }
};

// One message read from the stream. Owns the nats.c message.
class LogMessage {
 public:
  LogMessage(natsMsg* msg, uint64_t sequence, int64_t unix_nanos, uint64_t pending)
      : msg_(msg), sequence_(sequence), unix_nanos_(unix_nanos), pending_(pending) {}
  ~LogMessage() { natsMsg_Destroy(msg_); }
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;

  uint64_t sequence() const { return sequence_; }
  // When JetStream stored it (nanoseconds since the Unix epoch).
  int64_t unix_nanos() const { return unix_nanos_; }
  // Messages after this one the stream held when it was delivered.
  uint64_t pending() const { return pending_; }
  std::string_view data() const {
    return std::string_view(natsMsg_GetData(msg_), natsMsg_GetDataLength(msg_));
  }
  // The publisher's message id ("" if none).
  std::string_view msg_id() const;
  LogRecordView view() const { return {sequence_, data(), msg_id(), unix_nanos_, pending_}; }
  OwnedLogRecord Owned() const {
    return {sequence_, std::string(data()), std::string(msg_id()), unix_nanos_, pending_};
  }

 private:
  natsMsg* const msg_;
  const uint64_t sequence_;
  const int64_t unix_nanos_;
  const uint64_t pending_;
};

class JetStreamLog {
 public:
  // Uses the stream, creating it (file storage, limits retention, no age or
  // size limit) if it does not exist. Unavailable if NATS does not answer.
  static absl::StatusOr<std::unique_ptr<JetStreamLog>> Open(NatsConnection* nats,
                                                            JetStreamLogOptions options);

  // Appends `record` and waits for JetStream's acknowledgement (at most
  // `timeout`). Unavailable (naming NATS) when it does not come: the record
  // may or may not be in the stream, and a retry with the same `msg_id`
  // is safe. ResourceExhausted for a record over the size limit.
  absl::StatusOr<PublishAck> Publish(std::string_view record, const std::string& msg_id,
                                     std::chrono::milliseconds timeout);

  // Asks the stream (one JetStream request, bounded by the connection's
  // timeout); Unavailable while NATS does not answer.
  absl::StatusOr<StreamState> State();

  // Removes every record before `sequence` (which a published snapshot
  // contains).
  absl::Status PurgeBelow(uint64_t sequence);

  class Reader {
   public:
    ~Reader();
    // The next message; nullopt if none came within `timeout`. An error
    // means this reader is done: start a new one.
    absl::StatusOr<std::optional<std::unique_ptr<LogMessage>>> Next(
        std::chrono::milliseconds timeout);

   private:
    friend class JetStreamLog;
    explicit Reader(natsSubscription* sub) : sub_(sub) {}
    natsSubscription* const sub_;
  };
  // Reads the stream from `first_sequence` on.
  absl::StatusOr<std::unique_ptr<Reader>> ReadFrom(uint64_t first_sequence);

  // The largest record Publish accepts: the stream's limit or the servers'
  // max_payload, whichever is smaller, less room for headers.
  int64_t max_record_bytes() const;
  // ResourceExhausted, naming both sizes, for a record over max_record_bytes().
  absl::Status CheckRecordSize(size_t bytes) const;
  const JetStreamLogOptions& options() const { return options_; }
  NatsConnection* nats() const { return nats_; }

 private:
  JetStreamLog(NatsConnection* nats, JetStreamLogOptions options);
  absl::Status EnsureStream();

  NatsConnection* const nats_;
  const JetStreamLogOptions options_;
};

}  // namespace clickd

#endif  // CLICKD_REPLICATION_JETSTREAM_LOG_H_
