#include "server/update_stream.h"

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/mutex.h"
#include "core/base/quote.h"
#include "core/eval/metrics.h"
#include "server/call_util.h"
#include "server/raw_message.h"
#include "server/service.h"
#include "server/status.h"
#include "wire/model_config_proto.h"

namespace clickd {
namespace {

using SteadyClock = std::chrono::steady_clock;

// What both stream kinds share: the stream's model, fixed by its first
// message, and what the stream has applied so far.
class StreamUpdater {
 public:
  StreamUpdater(ClickdService* service, grpc::CallbackServerContext* context)
      : service_(service), context_(context) {}

  // Validates and learns one message (all or nothing); `response` gets
  // what a unary Update would answer.
  absl::Status Apply(const v1::UpdateRequest& request, v1::UpdateResponse* response) {
    if (DeadlinePassed(context_)) return DeadlinePassedError();
    if (absl::Status s = CheckModel(request.model()); !s.ok()) return s;
    scored_.clear();
    auto apply = [&] { return service_->ApplyUpdate(*served_, request, response, &scored_); };
    absl::Status status = Guarded("an update stream", apply);
    if (!status.ok()) return status;
    for (const ScoredExample& s : scored_) metrics_->Add(s.margin, s.label, s.importance);
    applied_ += response->applied();
    ++requests_;
    return absl::OkStatus();
  }

  // The error that ends a stream at its current message.
  absl::Status StreamError(const absl::Status& status) const {
    return absl::Status(status.code(),
                        absl::StrCat("message ", requests_, " (", applied_,
                                     " examples applied before it): ", status.message()));
  }

  uint64_t requests() const { return requests_; }
  uint64_t applied() const { return applied_; }
  // The model's version, or 0 before the first message.
  uint64_t model_version() const {
    return served_ == nullptr ? 0 : service_->ModelVersion(*served_);
  }
  std::optional<MetricsSummary> summary() const {
    if (!metrics_.has_value()) return std::nullopt;
    return metrics_->Summary();
  }

 private:
  absl::Status CheckModel(const std::string& name) {
    if (served_ == nullptr) {
      auto served = service_->Lookup(name, "model");
      if (!served.ok()) return served.status();
      served_ = *std::move(served);
      metrics_.emplace(served_->model().config().loss);
      return absl::OkStatus();
    }
    if (name != served_->name()) {
      return absl::InvalidArgumentError(absl::StrCat("model is ", Quote(name),
                                                     "; every message of a stream must name ",
                                                     Quote(served_->name())));
    }
    if (service_->Lookup(name, "model").value_or(nullptr) != served_) {
      // Learning into a deleted (or deleted and re-created) model would
      // acknowledge examples that no served model holds.
      return absl::NotFoundError(
          absl::StrCat("model \"", name, "\" was deleted or replaced during the stream"));
    }
    return absl::OkStatus();
  }

  ClickdService* const service_;
  grpc::CallbackServerContext* const context_;
  std::shared_ptr<ServedModel> served_;
  std::optional<ProgressiveMetrics> metrics_;  // exact, over this stream
  std::vector<ScoredExample> scored_;          // of the last message
  uint64_t requests_ = 0;
  uint64_t applied_ = 0;
};

// Reads one message ahead: while a worker applies message k, the gRPC
// thread reads and parses message k+1 into the other of two slots, so that
// parsing overlaps learning instead of following it. Messages are still
// applied one at a time and in order (the next apply starts when the one
// before it has finished), and at most one read is outstanding: a parsed
// message waiting for its apply holds the free slot, so the next read
// starts when that apply starts.
class UpdateStreamReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  UpdateStreamReactor(ClickdService* service, grpc::CallbackServerContext* context,
                      grpc::ByteBuffer* response_bytes)
      : service_(service),
        context_(context),
        response_bytes_(response_bytes),
        start_(SteadyClock::now()),
        updater_(service, context) {
    if (absl::Status s = service->CheckAccess(context, "UpdateStream"); !s.ok()) {
      finished_ = true;
      FinishAndRecord(s);
      return;
    }
    StartRead(&bytes_);
  }

  void OnReadDone(bool ok) override {
    int slot;
    {
      MutexLock lock(&mu_);
      if (finished_) return;  // a read that was outstanding when the stream ended
      slot = read_slot_;
    }
    const absl::Status parsed = ok ? ParseRequest(bytes_, &slots_[slot]) : absl::OkStatus();
    Step step;
    {
      MutexLock lock(&mu_);
      step = AfterRead(ok, parsed, slot);
    }
    // No apply is running unless the step is kWait, so the updater is this
    // thread's to read on kFail.
    Act(step, slot, parsed);
  }

  void OnDone() override { delete this; }

 private:
  // What a thread does after its part, decided under mu_ and done by Act.
  enum class Step { kWait, kApply, kSummary, kFail };

  // After a read into slots_[slot]: `ok` false if the client closed the
  // stream, else `parsed` is the parse's status.
  Step AfterRead(bool ok, const absl::Status& parsed, int slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!ok) closed_ = true;
    if (applying_) {
      // The worker takes it from here once its message is applied: the
      // summary, the error, or this message (whose read starts the next).
      if (!parsed.ok()) parse_error_ = parsed;
      if (ok && parsed.ok()) next_ready_ = true;
      return Step::kWait;
    }
    applying_ = true;
    if (!ok) return Step::kSummary;
    if (!parsed.ok()) {
      finished_ = true;
      return Step::kFail;
    }
    read_slot_ = 1 - slot;
    return Step::kApply;
  }

  // After the worker applied slots_[slot]: what the reader left meanwhile.
  // On kFail, *error is the parse error that ends the stream.
  Step AfterApply(int slot, absl::Status* error) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!parse_error_.ok()) {
      finished_ = true;
      *error = parse_error_;
      return Step::kFail;
    }
    if (next_ready_) {
      next_ready_ = false;
      read_slot_ = slot;  // free again: the next read parses into it
      return Step::kApply;
    }
    if (closed_) return Step::kSummary;
    applying_ = false;
    return Step::kWait;
  }

  // Does `step`: kApply applies slots_[slot] (and starts the next read),
  // kFail ends the stream with `error` at the current message.
  void Act(Step step, int slot, const absl::Status& error) {
    switch (step) {
      case Step::kWait:
        return;
      case Step::kApply:
        StartRead(&bytes_);
        service_->RunCallWork(
            slots_[slot].model(), [this, slot] { ApplyAndContinue(slot); },
            [this](const absl::Status& s) { EndWithError(s); });
        return;
      case Step::kSummary:
        // The exact summary sorts every margin of the stream: on a worker
        // (or here, if the executor refuses it).
        service_->RunCallWork(
            "", [this] { FinishWithSummary(); },
            [this](const absl::Status&) { FinishWithSummary(); });
        return;
      case Step::kFail:
        FinishAndRecord(updater_.StreamError(error));
        return;
    }
  }

  // On a worker: applies a message, then whatever the reader left: the
  // next message, the summary, or a later message's parse error.
  void ApplyAndContinue(int slot) {
    v1::UpdateResponse unused;
    if (absl::Status s = updater_.Apply(slots_[slot], &unused); !s.ok()) {
      EndWithError(s);
      return;
    }
    absl::Status error;
    Step step;
    {
      MutexLock lock(&mu_);
      step = AfterApply(slot, &error);
    }
    Act(step, 1 - slot, error);
  }

  // Ends the stream at the message being applied (the executor refused
  // it, or it was rejected). A read may still be outstanding: it completes
  // after Finish, and OnReadDone ignores it.
  void EndWithError(const absl::Status& s) {
    {
      MutexLock lock(&mu_);
      finished_ = true;
    }
    FinishAndRecord(updater_.StreamError(s));
  }

  void FinishWithSummary() {
    {
      MutexLock lock(&mu_);
      finished_ = true;
    }
    v1::UpdateStreamResponse response;
    response.set_requests(updater_.requests());
    response.set_applied(updater_.applied());
    response.set_model_version(updater_.model_version());
    if (auto summary = updater_.summary()) *response.mutable_metrics() = MetricsToProto(*summary);
    FinishAndRecord(SerializeResponse(response, response_bytes_));
  }

  // Finishes the call and records it; a stream the client cancelled counts
  // as CANCELLED, which is what the client sees.
  void FinishAndRecord(const absl::Status& status) {
    const absl::StatusCode code =
        status.ok() && context_->IsCancelled() ? absl::StatusCode::kCancelled : status.code();
    service_->RecordRequest("UpdateStream", code, SecondsSince(start_));
    Finish(service_->ToCallerStatus("UpdateStream", status));
  }

  ClickdService* const service_;
  grpc::CallbackServerContext* const context_;
  grpc::ByteBuffer* const response_bytes_;
  const SteadyClock::time_point start_;
  // Used by the one apply running at a time (and by the summary, after the
  // last); the reader touches it only while no apply runs.
  StreamUpdater updater_;
  grpc::ByteBuffer bytes_;  // the message being read
  // Parsed messages: slots_[read_slot_] belongs to the reader, the other to
  // the apply running or waiting (next_ready_); the hand-over is under mu_.
  v1::UpdateRequest slots_[2];

  Mutex mu_;
  int read_slot_ ABSL_GUARDED_BY(mu_) = 0;
  bool applying_ ABSL_GUARDED_BY(mu_) = false;     // an apply (or the summary) is running
  bool next_ready_ ABSL_GUARDED_BY(mu_) = false;   // the other slot waits for its apply
  bool closed_ ABSL_GUARDED_BY(mu_) = false;       // the client finished writing
  bool finished_ ABSL_GUARDED_BY(mu_) = false;     // Finish was called or is decided
  absl::Status parse_error_ ABSL_GUARDED_BY(mu_);  // for the worker to end the stream with
};

// Reads a message, applies it (on a worker), writes its ack, and only then
// reads the next: one message in flight per stream keeps the order of acks
// trivially the order of application.
class AckedUpdateStreamReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  AckedUpdateStreamReactor(ClickdService* service, grpc::CallbackServerContext* context)
      : service_(service),
        context_(context),
        start_(SteadyClock::now()),
        updater_(service, context) {
    if (absl::Status s = service->CheckAccess(context, "UpdateStreamAcked"); !s.ok()) {
      FinishAndRecord(s);
      return;
    }
    StartRead(&bytes_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client finished writing
      FinishAndRecord(absl::OkStatus());
      return;
    }
    if (absl::Status s = ParseRequest(bytes_, &request_); !s.ok()) {
      FinishAndRecord(updater_.StreamError(s));
      return;
    }
    service_->RunCallWork(
        request_.model(), [this] { ApplyAndAck(); },
        [this](const absl::Status& s) { FinishAndRecord(updater_.StreamError(s)); });
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {  // the client went away; what it was not told about is still applied
      FinishAndRecord(absl::CancelledError("the client stopped reading acks"));
      return;
    }
    StartRead(&bytes_);
  }

  void OnDone() override { delete this; }

 private:
  // On a worker: applies the message just read and writes its ack; the
  // next read starts when the ack is written.
  void ApplyAndAck() {
    v1::UpdateResponse response;
    if (absl::Status s = updater_.Apply(request_, &response); !s.ok()) {
      FinishAndRecord(updater_.StreamError(s));
      return;
    }
    ack_.set_request_id(request_.request_id());
    ack_.set_applied(response.applied());
    ack_.set_acknowledged(updater_.applied());
    ack_.set_model_version(response.model_version());
    ack_.set_duplicate(response.duplicate());
    ack_.mutable_margins()->Swap(response.mutable_margins());
    if (absl::Status s = SerializeResponse(ack_, &ack_bytes_); !s.ok()) {
      FinishAndRecord(s);
      return;
    }
    StartWrite(&ack_bytes_);
  }

  void FinishAndRecord(const absl::Status& status) {
    const absl::StatusCode code =
        status.ok() && context_->IsCancelled() ? absl::StatusCode::kCancelled : status.code();
    service_->RecordRequest("UpdateStreamAcked", code, SecondsSince(start_));
    Finish(service_->ToCallerStatus("UpdateStreamAcked", status));
  }

  ClickdService* const service_;
  grpc::CallbackServerContext* const context_;
  const SteadyClock::time_point start_;
  StreamUpdater updater_;
  grpc::ByteBuffer bytes_;     // the message being read
  v1::UpdateRequest request_;  // ... parsed
  v1::UpdateAck ack_;
  grpc::ByteBuffer ack_bytes_;  // ... serialized, being written
};

}  // namespace

grpc::ServerReadReactor<grpc::ByteBuffer>* NewUpdateStreamReactor(
    ClickdService* service, grpc::CallbackServerContext* context, grpc::ByteBuffer* response) {
  return new UpdateStreamReactor(service, context, response);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NewAckedUpdateStreamReactor(
    ClickdService* service, grpc::CallbackServerContext* context) {
  return new AckedUpdateStreamReactor(service, context);
}

}  // namespace clickd
