#include "replication/jetstream_log.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace clickd {
namespace {

// Room left in a message for the headers (the message id) and the
// protocol line.
constexpr int64_t kHeaderRoom = 4096;

}  // namespace

JetStreamLog::JetStreamLog(NatsConnection* nats, JetStreamLogOptions options)
    : nats_(nats), options_(std::move(options)) {}

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
  if (!options_.create_if_missing) {
    return absl::NotFoundError(absl::StrCat("stream ", options_.stream,
                                            " does not exist: no clickd replica has created it"));
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

absl::StatusOr<StreamState> JetStreamLog::State() {
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

}  // namespace clickd
