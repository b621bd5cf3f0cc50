#include "replication/async_publisher.h"

#include "absl/strings/str_cat.h"
#include "replication/nats_connection.h"

namespace clickd {
namespace {

// Records in flight at once; one more waits in Publish (at most
// kStallWait, then Unavailable) until an acknowledgement frees room. Far
// above what the executor's queue lets in.
constexpr int64_t kMaxPending = 8192;
constexpr int64_t kStallWaitMs = 1000;

}  // namespace

absl::StatusOr<std::unique_ptr<AsyncPublisher>> AsyncPublisher::Create(JetStreamLog* log) {
  std::unique_ptr<AsyncPublisher> self(new AsyncPublisher(log));
  jsOptions options;
  jsOptions_Init(&options);
  options.Wait = log->nats()->timeout().count();
  options.PublishAsync.MaxPending = kMaxPending;
  options.PublishAsync.StallWait = kStallWaitMs;
  options.PublishAsync.AckHandler = &AsyncPublisher::OnAck;
  options.PublishAsync.AckHandlerClosure = self.get();
  if (natsStatus s = natsConnection_JetStream(&self->js_, log->nats()->connection(), &options);
      s != NATS_OK) {
    return NatsError(s, "JetStream context for asynchronous publishes");
  }
  return self;
}

AsyncPublisher::~AsyncPublisher() {
  Cancel();
  if (js_ != nullptr) jsCtx_Destroy(js_);
}

absl::Status AsyncPublisher::Publish(std::string_view record, const std::string& msg_id,
                                     std::chrono::milliseconds timeout, Done done) {
  if (absl::Status s = log_->CheckRecordSize(record.size()); !s.ok()) return s;
  natsMsg* msg = nullptr;
  if (natsStatus s = natsMsg_Create(&msg, log_->options().subject.c_str(), nullptr, record.data(),
                                    static_cast<int>(record.size()));
      s != NATS_OK) {
    return NatsError(s, "make the record's message");
  }
  const natsMsg* key = msg;
  {
    // Registered first: the acknowledgement can arrive before
    // js_PublishMsgAsync returns.
    MutexLock lock(&mu_);
    if (cancelled_) {
      natsMsg_Destroy(msg);
      return absl::UnavailableError("the replica is shutting down");
    }
    pending_.emplace(key, std::move(done));
  }
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MsgId = msg_id.c_str();
  options.MaxWait = timeout.count();
  natsStatus s = js_PublishMsgAsync(js_, &msg, &options);
  if (s != NATS_OK) {
    // nats.c kept no copy: the message is ours again and no callback
    // comes.
    natsMsg_Destroy(msg);
    MutexLock lock(&mu_);
    pending_.erase(key);
    return absl::UnavailableError(
        NatsError(s, absl::StrCat("could not send the record to ", log_->options().stream))
            .message());
  }
  return absl::OkStatus();
}

void AsyncPublisher::Cancel() {
  MutexLock lock(&mu_);
  cancelled_ = true;
  pending_.clear();
  while (running_ > 0) idle_cv_.Wait(&mu_);
}

void AsyncPublisher::OnAck(jsCtx*, natsMsg* msg, jsPubAck* ack, jsPubAckErr* error, void* closure) {
  static_cast<AsyncPublisher*>(closure)->Acknowledged(msg, ack, error);
  // With an acknowledgement handler, the sent message is ours to free.
  natsMsg_Destroy(msg);
}

void AsyncPublisher::Acknowledged(natsMsg* msg, jsPubAck* ack, jsPubAckErr* error) {
  Done done;
  {
    MutexLock lock(&mu_);
    auto it = pending_.find(msg);
    if (it == pending_.end()) return;  // cancelled
    done = std::move(it->second);
    pending_.erase(it);
    ++running_;
  }
  if (ack != nullptr) {
    done(PublishAck{ack->Sequence, ack->Duplicate});
  } else {
    const natsStatus s = error != nullptr ? error->Err : NATS_ERR;
    const jsErrCode code = error != nullptr ? error->ErrCode : static_cast<jsErrCode>(0);
    // Not acknowledged means "maybe stored": always worth a retry.
    done(absl::UnavailableError(
        NatsError(s, code,
                  absl::StrCat("did not acknowledge the publish to ", log_->options().stream))
            .message()));
  }
  MutexLock lock(&mu_);
  --running_;
  idle_cv_.SignalAll();
}

}  // namespace clickd
