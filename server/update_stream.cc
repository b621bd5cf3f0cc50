#include "server/update_stream.h"

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/quote.h"
#include "core/eval/metrics.h"
#include "server/call_util.h"
#include "server/raw_message.h"
#include "server/service.h"
#include "server/status.h"
#include "server/stream_reactor.h"
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
  // what a unary Update would answer. `plan` is what placing it learned.
  absl::Status Apply(const v1::UpdateRequest& request, const CallPlan& plan,
                     v1::UpdateResponse* response) {
    if (DeadlinePassed(context_)) return DeadlinePassedError();
    if (absl::Status s = CheckModel(request.model()); !s.ok()) return s;
    scored_.clear();
    // The cost was counted for the model the placement found, which may be
    // an incarnation this stream does not learn into.
    const RequestCost* counted = plan.served == served_ ? plan.counted() : nullptr;
    auto apply = [&] {
      return service_->ApplyUpdate(*served_, request, response, &scored_, counted);
    };
    absl::Status status = Guarded("an update stream", apply);
    if (!status.ok()) return status;
    for (const ScoredExample& s : scored_) metrics_->Add(s.margin, s.label, s.importance);
    applied_ += response->applied();
    ++requests_;
    return absl::OkStatus();
  }

  // Applies `request` (Apply), then calls then(status, &response): right
  // here if the service places it here (ClickdService::PlaceUpdate), else
  // on a worker. A refusal by the executor reaches `then` as the status.
  // The stream's next read starts in `then`, so its messages are applied
  // one at a time, in order; `request` must live until `then` runs.
  template <typename Then>
  void ApplyThen(const v1::UpdateRequest& request, Then then) {
    CallPlacement placed = service_->PlaceUpdate(request);
    if (placed) {
      v1::UpdateResponse response;
      absl::Status s;
      {
        // Given back before `then`, so that the stream's next message,
        // which may be read as soon as `then` runs, can take it.
        const InlineLease here = std::move(placed.here);
        s = Apply(request, placed.plan, &response);
      }
      then(s, &response);
      return;
    }
    service_->RunCallWork(
        request.model(),
        [this, &request, then, plan = std::move(placed.plan)] {
          v1::UpdateResponse response;
          const absl::Status s = Apply(request, plan, &response);
          then(s, &response);
        },
        [then](const absl::Status& refused) {
          v1::UpdateResponse none;
          then(refused, &none);
        },
        placed.light);
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

class UpdateStreamReactor final
    : public StreamReactor<grpc::ServerReadReactor<grpc::ByteBuffer>, v1::UpdateRequest> {
 public:
  UpdateStreamReactor(ClickdService* service, grpc::CallbackServerContext* context,
                      grpc::ByteBuffer* response_bytes)
      : StreamReactor(service, context, "UpdateStream"),
        response_bytes_(response_bytes),
        updater_(service, context) {
    Begin();
  }

  void OnReadDone(bool ok) override {
    Arrived();
    if (!ok) {  // the client closed the stream
      // The exact summary sorts every margin of the stream: on a worker
      // too (or here, if the executor refuses it).
      service()->RunCallWork(
          "", [this] { FinishWithSummary(); },
          [this](const absl::Status&) { FinishWithSummary(); });
      return;
    }
    if (absl::Status s = ParseArrived(); !s.ok()) {
      FinishAndRecord(updater_.StreamError(s));
      return;
    }
    updater_.ApplyThen(request(),
                       [this](const absl::Status& s, v1::UpdateResponse*) { ReadNextAfter(s); });
  }

 private:
  // After the message just read was applied with `status`: reads the next,
  // or ends the stream with the message's error.
  void ReadNextAfter(const absl::Status& status) {
    if (!status.ok()) {
      FinishAndRecord(updater_.StreamError(status));
      return;
    }
    ReadNext();
  }

  void FinishWithSummary() {
    v1::UpdateStreamResponse response;
    response.set_requests(updater_.requests());
    response.set_applied(updater_.applied());
    response.set_model_version(updater_.model_version());
    if (auto summary = updater_.summary()) *response.mutable_metrics() = MetricsToProto(*summary);
    FinishAndRecord(SerializeResponse(response, response_bytes_));
  }

  grpc::ByteBuffer* const response_bytes_;
  StreamUpdater updater_;
};

// Reads a message, applies it (on a worker or here), writes its ack, and only then
// reads the next: one message in flight per stream keeps the order of acks
// trivially the order of application.
class AckedUpdateStreamReactor final
    : public StreamReactor<grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
                           v1::UpdateRequest> {
 public:
  AckedUpdateStreamReactor(ClickdService* service, grpc::CallbackServerContext* context)
      : StreamReactor(service, context, "UpdateStreamAcked"), updater_(service, context) {
    Begin();
  }

  void OnReadDone(bool ok) override {
    Arrived();
    if (!ok) {  // the client finished writing
      FinishAndRecord(absl::OkStatus());
      return;
    }
    if (absl::Status s = ParseArrived(); !s.ok()) {
      FinishAndRecord(updater_.StreamError(s));
      return;
    }
    updater_.ApplyThen(request(), [this](const absl::Status& s, v1::UpdateResponse* response) {
      AckAfter(s, response);
    });
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {  // the client went away; what it was not told about is still applied
      FinishAndRecord(absl::CancelledError("the client stopped reading acks"));
      return;
    }
    ReadNext();
  }

 private:
  // After the message just read was applied with `status` (answered in
  // *response): writes its ack, or ends the stream with its error. The next
  // read starts when the ack is written.
  void AckAfter(const absl::Status& status, v1::UpdateResponse* response) {
    if (!status.ok()) {
      FinishAndRecord(updater_.StreamError(status));
      return;
    }
    ack_.set_request_id(request().request_id());
    ack_.set_applied(response->applied());
    ack_.set_acknowledged(updater_.applied());
    ack_.set_model_version(response->model_version());
    ack_.set_duplicate(response->duplicate());
    ack_.mutable_margins()->Swap(response->mutable_margins());
    if (absl::Status s = SerializeResponse(ack_, &ack_bytes_); !s.ok()) {
      FinishAndRecord(s);
      return;
    }
    StartWrite(&ack_bytes_);
  }

  StreamUpdater updater_;
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
