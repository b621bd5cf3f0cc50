#include "server/feedback_stream.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "server/call_util.h"
#include "server/raw_message.h"
#include "server/service.h"
#include "server/stream_reactor.h"

namespace clickd {
namespace {

constexpr std::string_view kMethod = "FeedbackStream";

class FeedbackStreamReactor final
    : public StreamReactor<grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
                           v1::FeedbackRequest> {
 public:
  FeedbackStreamReactor(ClickdService* service, grpc::CallbackServerContext* context)
      : StreamReactor(service, context, kMethod) {
    Begin();
  }

  void OnReadDone(bool ok) override {
    Arrived();
    if (!ok) {  // the client finished writing
      FinishAndRecord(absl::OkStatus());
      return;
    }
    if (absl::Status s = ParseArrived(); !s.ok()) {
      FinishAndRecord(MessageError(s));
      return;
    }
    service()->RunCallWork(
        request().model(), [this] { ApplyAndAnswer(); },
        [this](const absl::Status& s) { FinishAndRecord(MessageError(s)); });
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {  // the client went away; what it was not told about is still applied
      FinishAndRecord(absl::CancelledError("the client stopped reading answers"));
      return;
    }
    ++messages_;
    ReadNext();
  }

 private:
  // On a worker: applies the message just read and writes its answer.
  void ApplyAndAnswer() {
    response_.Clear();
    absl::Status status = DeadlinePassed(context()) ? DeadlinePassedError() : absl::OkStatus();
    if (status.ok()) {
      auto apply = [&] { return service()->ApplyFeedback(request(), &response_); };
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

  uint64_t messages_ = 0;  // answered so far
  v1::FeedbackResponse response_;
  grpc::ByteBuffer answer_bytes_;  // ... serialized, being written
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NewFeedbackStreamReactor(
    ClickdService* service, grpc::CallbackServerContext* context) {
  return new FeedbackStreamReactor(service, context);
}

}  // namespace clickd
