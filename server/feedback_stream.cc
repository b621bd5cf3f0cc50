#include "server/feedback_stream.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "server/call_util.h"
#include "server/raw_message.h"
#include "server/service.h"

namespace clickd {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr std::string_view kMethod = "FeedbackStream";

class FeedbackStreamReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  FeedbackStreamReactor(ClickdService* service, grpc::CallbackServerContext* context)
      : service_(service), context_(context), start_(SteadyClock::now()) {
    absl::StatusOr<StreamLimit::Ticket> ticket = service->OpenStream(context, kMethod);
    if (!ticket.ok()) {
      FinishAndRecord(ticket.status());
      return;
    }
    ticket_ = *std::move(ticket);
    idle_ = service->WatchStream(context);
    idle_.Waiting();
    StartRead(&bytes_);
  }

  void OnReadDone(bool ok) override {
    idle_.Working();
    if (!ok) {  // the client finished writing
      FinishAndRecord(absl::OkStatus());
      return;
    }
    if (absl::Status s = ParseRequest(bytes_, &request_); !s.ok()) {
      FinishAndRecord(MessageError(s));
      return;
    }
    service_->RunCallWork(
        request_.model(), [this] { ApplyAndAnswer(); },
        [this](const absl::Status& s) { FinishAndRecord(MessageError(s)); });
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {  // the client went away; what it was not told about is still applied
      FinishAndRecord(absl::CancelledError("the client stopped reading answers"));
      return;
    }
    ++messages_;
    idle_.Waiting();
    StartRead(&bytes_);
  }

  void OnDone() override { delete this; }

 private:
  // On a worker: applies the message just read and writes its answer.
  void ApplyAndAnswer() {
    response_.Clear();
    absl::Status status = DeadlinePassed(context_) ? DeadlinePassedError() : absl::OkStatus();
    if (status.ok()) {
      auto apply = [&] { return service_->ApplyFeedback(request_, &response_); };
      status = Guarded("a feedback stream", apply);
    }
    if (!status.ok()) {
      FinishAndRecord(MessageError(status));
      return;
    }
    if (absl::Status s = SerializeResponse(response_, &answer_bytes_); !s.ok()) {
      FinishAndRecord(s);
      return;
    }
    StartWrite(&answer_bytes_);
  }

  absl::Status MessageError(const absl::Status& status) const {
    return absl::Status(status.code(), absl::StrCat("message ", messages_, ": ", status.message()));
  }

  void FinishAndRecord(const absl::Status& status) {
    Finish(service_->EndStream(kMethod, context_, start_, status));
  }

  ClickdService* const service_;
  grpc::CallbackServerContext* const context_;
  const SteadyClock::time_point start_;
  StreamLimit::Ticket ticket_;  // this stream's place among the open ones
  // Under --stream_idle_timeout_seconds (server/stream_idle.h).
  StreamIdleWatch::Registration idle_;
  uint64_t messages_ = 0;        // answered so far
  grpc::ByteBuffer bytes_;       // the message being read
  v1::FeedbackRequest request_;  // ... parsed
  v1::FeedbackResponse response_;
  grpc::ByteBuffer answer_bytes_;  // ... serialized, being written
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NewFeedbackStreamReactor(
    ClickdService* service, grpc::CallbackServerContext* context) {
  return new FeedbackStreamReactor(service, context);
}

}  // namespace clickd
