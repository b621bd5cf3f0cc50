#include "replication/jetstream_log.h"

#include <unistd.h>

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"

namespace clickd {
namespace {

// Room left in a message for the headers (the message id) and the
// protocol line.
constexpr int64_t kHeaderRoom = 4096;

// 64 random bits, for message ids no other process hands out.
uint64_t RandomId() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device() ^ static_cast<uint64_t>(getpid());
}

}  // namespace

JetStreamLog::JetStreamLog(NatsConnection* nats, JetStreamLogOptions options)
    : nats_(nats),
      options_(std::move(options)),
      id_prefix_(absl::StrCat("log-", absl::Hex(RandomId(), absl::kZeroPad16), "-")) {}

std::string_view LogMessage::msg_id() const {
  const char* value = nullptr;
  if (natsMsgHeader_Get(msg_, "Nats-Msg-Id", &value) != NATS_OK || value == nullptr) return {};
  return value;
}

absl::StatusOr<std::unique_ptr<JetStreamLog>> JetStreamLog::Open(NatsConnection* nats,
                                                                 JetStreamLogOptions options) {
  std::unique_ptr<JetStreamLog> log(new JetStreamLog(nats, std::move(options)));
  if (absl::Status s = log->EnsureStream(); !s.ok()) return s;
  return log;
}

absl::Status JetStreamLog::EnsureStream() {
  jsStreamInfo* info = nullptr;
  jsErrCode js_error = static_cast<jsErrCode>(0);
  natsStatus s =
      js_GetStreamInfo(&info, nats_->jetstream(), options_.stream.c_str(), nullptr, &js_error);
  if (s == NATS_OK) {
    jsStreamInfo_Destroy(info);
    return absl::OkStatus();
  }
  if (s != NATS_NOT_FOUND && js_error != JSStreamNotFoundErr) {
    return NatsError(s, js_error, absl::StrCat("stream ", options_.stream, " info"));
  }
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  const char* subjects[] = {options_.subject.c_str()};
  config.Name = options_.stream.c_str();
  config.Description = "clickd's replicated update log (docs/replication.md)";
  config.Subjects = subjects;
  config.SubjectsLen = 1;
  config.Retention = js_LimitsPolicy;
  config.Storage = js_FileStorage;
  config.Replicas = options_.replicas;
  config.Duplicates = std::chrono::nanoseconds(options_.duplicate_window).count();
  config.MaxMsgSize = options_.max_record_bytes;
  // Records leave only through PurgeBelow, never by age or size.
  config.Discard = js_DiscardNew;
  js_error = static_cast<jsErrCode>(0);
  s = js_AddStream(&info, nats_->jetstream(), &config, nullptr, &js_error);
  if (s != NATS_OK) {
    return NatsError(
        s, js_error,
        absl::StrCat("create stream ", options_.stream, " (R=", options_.replicas, ")"));
  }
  jsStreamInfo_Destroy(info);
  return absl::OkStatus();
}

int64_t JetStreamLog::max_record_bytes() const {
  int64_t limit = options_.max_record_bytes;
  if (const int64_t payload = nats_->max_payload(); payload > 0) limit = std::min(limit, payload);
  return std::max<int64_t>(0, limit - kHeaderRoom);
}

absl::Status JetStreamLog::CheckRecordSize(size_t bytes) const {
  if (static_cast<int64_t>(bytes) <= max_record_bytes()) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the update encodes to ", bytes, " bytes; the replicated log takes at most ",
      max_record_bytes(), " per record (NATS max_payload less headers): send smaller batches"));
}

absl::StatusOr<PublishAck> JetStreamLog::Publish(std::string_view record, const std::string& msg_id,
                                                 std::chrono::milliseconds timeout) {
  if (absl::Status s = CheckRecordSize(record.size()); !s.ok()) return s;
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MsgId = msg_id.c_str();
  options.MaxWait = timeout.count();
  jsPubAck* ack = nullptr;
  jsErrCode js_error = static_cast<jsErrCode>(0);
  natsStatus s = js_Publish(&ack, nats_->jetstream(), options_.subject.c_str(), record.data(),
                            static_cast<int>(record.size()), &options, &js_error);
  if (s != NATS_OK) {
    absl::Status status = NatsError(
        s, js_error, absl::StrCat("did not acknowledge the publish to ", options_.stream));
    // Not acknowledged means "maybe stored": always worth a retry.
    return absl::UnavailableError(status.message());
  }
  PublishAck out{ack->Sequence, ack->Duplicate};
  jsPubAck_Destroy(ack);
  return out;
}

absl::StatusOr<StreamState> JetStreamLog::State() { return FetchState(); }

absl::StatusOr<StreamState> JetStreamLog::FetchState() const {
  jsStreamInfo* info = nullptr;
  jsErrCode js_error = static_cast<jsErrCode>(0);
  natsStatus s =
      js_GetStreamInfo(&info, nats_->jetstream(), options_.stream.c_str(), nullptr, &js_error);
  if (s != NATS_OK)
    return NatsError(s, js_error, absl::StrCat("stream ", options_.stream, " info"));
  StreamState state;
  state.first_sequence = info->State.Msgs == 0 ? 0 : info->State.FirstSeq;
  state.last_sequence = info->State.LastSeq;
  state.messages = info->State.Msgs;
  state.bytes = info->State.Bytes;
  state.replicas = info->Config != nullptr ? static_cast<int>(info->Config->Replicas) : 0;
  if (info->Cluster != nullptr && info->Cluster->Leader != nullptr) {
    state.leader = info->Cluster->Leader;
  }
  jsStreamInfo_Destroy(info);
  MutexLock lock(&cache_mu_);
  cached_ = state;
  return state;
}

absl::Status JetStreamLog::PurgeBelow(uint64_t sequence) {
  // JetStream reads a purge sequence of 0 or 1 as "no sequence": it would
  // remove everything.
  if (sequence <= 1) return absl::OkStatus();
  jsOptions options;
  jsOptions_Init(&options);
  options.Stream.Purge.Sequence = sequence;
  jsErrCode js_error = static_cast<jsErrCode>(0);
  natsStatus s = js_PurgeStream(nats_->jetstream(), options_.stream.c_str(), &options, &js_error);
  if (s != NATS_OK) {
    return NatsError(s, js_error, absl::StrCat("purge ", options_.stream, " below ", sequence));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<JetStreamLog::Reader>> JetStreamLog::ReadFrom(
    uint64_t first_sequence) {
  jsSubOptions sub_options;
  jsSubOptions_Init(&sub_options);
  sub_options.Stream = options_.stream.c_str();
  sub_options.Ordered = true;
  sub_options.Config.DeliverPolicy = js_DeliverByStartSequence;
  sub_options.Config.OptStartSeq = std::max<uint64_t>(1, first_sequence);
  natsSubscription* sub = nullptr;
  jsErrCode js_error = static_cast<jsErrCode>(0);
  natsStatus s = js_SubscribeSync(&sub, nats_->jetstream(), options_.subject.c_str(), nullptr,
                                  &sub_options, &js_error);
  if (s != NATS_OK) {
    return NatsError(s, js_error,
                     absl::StrCat("subscribe to ", options_.stream, " from ", first_sequence));
  }
  // Records can be large and many: let the subscription hold up to 64 MiB.
  natsSubscription_SetPendingLimits(sub, -1, 64 << 20);
  return std::unique_ptr<Reader>(new Reader(sub));
}

JetStreamLog::Reader::~Reader() {
  natsSubscription_Unsubscribe(sub_);
  natsSubscription_Destroy(sub_);
}

absl::StatusOr<std::optional<std::unique_ptr<LogMessage>>> JetStreamLog::Reader::Next(
    std::chrono::milliseconds timeout) {
  natsMsg* msg = nullptr;
  natsStatus s = natsSubscription_NextMsg(&msg, sub_, timeout.count());
  if (s == NATS_TIMEOUT) return std::optional<std::unique_ptr<LogMessage>>();
  if (s != NATS_OK) return NatsError(s, "read the log");
  jsMsgMetaData* meta = nullptr;
  if (natsStatus m = natsMsg_GetMetaData(&meta, msg); m != NATS_OK) {
    natsMsg_Destroy(msg);
    return NatsError(m, "message without JetStream metadata");
  }
  auto out =
      std::make_unique<LogMessage>(msg, meta->Sequence.Stream, meta->Timestamp, meta->NumPending);
  jsMsgMetaData_Destroy(meta);
  return std::optional<std::unique_ptr<LogMessage>>(std::move(out));
}

// --- UpdateLog -------------------------------------------------------------

std::string JetStreamLog::NewMessageId() {
  return absl::StrCat(id_prefix_, next_id_.fetch_add(1, std::memory_order_relaxed));
}

absl::StatusOr<uint64_t> JetStreamLog::Append(std::string_view record) {
  auto ack = Publish(record, NewMessageId(), nats_->timeout());
  if (!ack.ok()) return ack.status();
  if (!ack->duplicate) {
    MutexLock lock(&cache_mu_);
    if (ack->sequence > cached_.last_sequence) {
      if (cached_.messages == 0) cached_.first_sequence = ack->sequence;
      cached_.last_sequence = ack->sequence;
      ++cached_.messages;
      cached_.bytes += record.size();
    }
  }
  return ack->sequence;
}

// An acknowledged publish is already stored by a quorum of the stream's
// RAFT group (Publish waits for the ack): nothing more to wait for.
absl::Status JetStreamLog::WaitDurable(uint64_t) { return absl::OkStatus(); }

absl::Status JetStreamLog::ReadAfter(
    uint64_t after, const std::function<absl::Status(uint64_t, std::string_view)>& fn) {
  auto state = FetchState();
  if (!state.ok()) return state.status();
  const uint64_t last = state->last_sequence;
  if (state->messages == 0 || after >= last) return absl::OkStatus();
  uint64_t next = std::max(after + 1, state->first_sequence);
  auto reader = ReadFrom(next);
  if (!reader.ok()) return reader.status();
  const std::chrono::milliseconds timeout = nats_->timeout();
  auto missing = [&](uint64_t through) {
    return absl::DataLossError(absl::StrCat("stream ", options_.stream, " no longer holds records ",
                                            next, "..", through,
                                            " (purged or deleted while they were read)"));
  };
  // Bounded: every wait is at most `timeout`, and the read gives up once
  // `timeout` passes without a new record.
  auto progress_deadline = std::chrono::steady_clock::now() + timeout;
  while (next <= last) {
    if (std::chrono::steady_clock::now() >= progress_deadline) {
      return absl::UnavailableError(absl::StrCat("NATS JetStream did not deliver record ", next,
                                                 " of stream ", options_.stream, " within ",
                                                 timeout.count(), " ms"));
    }
    auto message = (*reader)->Next(timeout);
    if (!message.ok()) return absl::UnavailableError(message.status().message());
    if (!message->has_value()) continue;  // the deadline above ends the wait
    const LogMessage& m = ***message;
    if (m.sequence() < next) continue;  // a redelivery
    if (m.sequence() > next) return missing(std::min(m.sequence() - 1, last));
    if (absl::Status s = fn(m.sequence(), m.data()); !s.ok()) return s;
    // Nothing after it in the stream although `last` was not reached: the
    // rest was deleted.
    if (m.pending() == 0 && next < last) {
      ++next;
      return missing(last);
    }
    ++next;
    progress_deadline = std::chrono::steady_clock::now() + timeout;
  }
  return absl::OkStatus();
}

absl::Status JetStreamLog::TruncateThrough(uint64_t sequence) {
  auto state = FetchState();
  if (!state.ok()) return state.status();
  // Never past the last record: a purge beyond it could move the stream's
  // sequences on, and last_sequence() must not change.
  const uint64_t through = std::min(sequence, state->last_sequence);
  if (absl::Status s = PurgeBelow(through + 1); !s.ok()) return s;
  (void)FetchState();  // refresh the cache; a failure leaves it stale
  return absl::OkStatus();
}

absl::Status JetStreamLog::ResetAfter(uint64_t sequence) {
  auto state = FetchState();
  if (!state.ok()) return state.status();
  if (state->last_sequence == sequence) return TruncateThrough(sequence);
  const std::string why =
      state->last_sequence > sequence
          ? absl::StrCat("stream ", options_.stream, " holds records after ", sequence,
                         " (through ", state->last_sequence, ")")
          : absl::StrCat("stream ", options_.stream, " ends at ", state->last_sequence,
                         ", so its next record gets sequence ", state->last_sequence + 1, ", not ",
                         sequence + 1);
  return absl::FailedPreconditionError(
      absl::StrCat("a JetStream stream's sequences cannot be moved; ", why,
                   ": a replica restores from a snapshot and reads the stream after it instead"));
}

StreamState JetStreamLog::CurrentState() const {
  if (auto state = FetchState(); state.ok()) return *state;
  MutexLock lock(&cache_mu_);
  return cached_;
}

uint64_t JetStreamLog::first_sequence() const {
  const StreamState state = CurrentState();
  return state.messages == 0 ? state.last_sequence + 1 : state.first_sequence;
}

uint64_t JetStreamLog::last_sequence() const { return CurrentState().last_sequence; }

uint64_t JetStreamLog::size_bytes() const {
  const StreamState state = CurrentState();
  return state.messages == 0 ? 0 : state.bytes;
}

}  // namespace clickd
