// StreamReactor: what every streaming method's reactor shares
// (UpdateStream, UpdateStreamAcked, FeedbackStream): its place among the
// open streams (--max_open_streams), the idle watch
// (--stream_idle_timeout_seconds), reading one message at a time into a
// parsed request, and ending the call through ClickdService::EndStream,
// which records it.
//
// A reactor derives from StreamReactor<grpc's reactor, its request> and
// calls Begin() last in its constructor: the first read must not start
// before the derived object is whole, since its OnReadDone may run on
// another thread at once. In OnReadDone it calls Arrived() first, then
// reads `request()` after ParseArrived(); ReadNext() asks for the next
// message.
//
// Thread safety: none of its own. Each reactor keeps one read or write
// outstanding at a time, so its callbacks never overlap.
#ifndef CLICKD_SERVER_STREAM_REACTOR_H_
#define CLICKD_SERVER_STREAM_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <string_view>

#include "absl/status/status.h"
#include "server/raw_message.h"
#include "server/service.h"

namespace clickd {

template <typename GrpcReactor, typename Request>
class StreamReactor : public GrpcReactor {
 public:
  void OnDone() override { delete this; }

 protected:
  StreamReactor(ClickdService* service, grpc::CallbackServerContext* context,
                std::string_view method)
      : service_(service),
        context_(context),
        method_(method),
        start_(std::chrono::steady_clock::now()) {}
  ~StreamReactor() override = default;

  // Takes the stream's place among the open ones (or ends the call with
  // why not) and reads the first message.
  void Begin() {
    absl::StatusOr<StreamLimit::Ticket> ticket = service_->OpenStream(context_, method_);
    if (!ticket.ok()) {
      FinishAndRecord(ticket.status());
      return;
    }
    ticket_ = *std::move(ticket);
    idle_ = service_->WatchStream(context_);
    ReadNext();
  }

  // Waits for the next message (the idle timeout runs meanwhile).
  void ReadNext() {
    idle_.Waiting();
    this->StartRead(&bytes_);
  }

  // A read finished: the idle timeout stops until ReadNext.
  void Arrived() { idle_.Working(); }

  // Parses the message just read into request().
  absl::Status ParseArrived() { return ParseRequest(bytes_, &request_); }

  // Ends the call with `status` and records it.
  void FinishAndRecord(const absl::Status& status) {
    this->Finish(service_->EndStream(method_, context_, start_, status));
  }

  ClickdService* service() const { return service_; }
  grpc::CallbackServerContext* context() const { return context_; }
  Request& request() { return request_; }

 private:
  ClickdService* const service_;
  grpc::CallbackServerContext* const context_;
  const std::string_view method_;  // a literal
  const std::chrono::steady_clock::time_point start_;
  StreamLimit::Ticket ticket_;  // this stream's place among the open ones
  StreamIdleWatch::Registration idle_;
  grpc::ByteBuffer bytes_;  // the message being read
  Request request_;         // ... parsed
};

}  // namespace clickd

#endif  // CLICKD_SERVER_STREAM_REACTOR_H_
