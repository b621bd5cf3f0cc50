// UnaryCall: one raw unary call of ClickdService in flight: its request and
// response messages (on one protobuf arena, freed when the last holder of
// the call lets go) and its single finish.
//
// A call may be finished from more than one place (a worker with the
// result, the executor refusing the work, an alarm at the call's deadline);
// Finish claims the call once and ignores later attempts, so the reactor is
// finished exactly once and `fill` (which writes the response) runs only for
// the winner.
//
// Thread safety: Finish and finished() may race; the messages belong to
// whoever runs the call's work until it finishes.
#ifndef CLICKD_SERVER_UNARY_CALL_H_
#define CLICKD_SERVER_UNARY_CALL_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include <atomic>
#include <chrono>
#include <string_view>

#include "absl/status/status.h"
#include "google/protobuf/arena.h"
#include "server/call_util.h"
#include "server/raw_message.h"

namespace clickd {

template <typename Service, typename Request, typename Response>
class UnaryCall {
 public:
  UnaryCall(const Service* service, grpc::CallbackServerContext* context, std::string_view method,
            grpc::ByteBuffer* response_bytes)
      : service_(service),
        reactor_(context->DefaultReactor()),
        method_(method),
        response_bytes_(response_bytes),
        start_(std::chrono::steady_clock::now()),
        request_(google::protobuf::Arena::CreateMessage<Request>(&arena_)),
        response_(google::protobuf::Arena::CreateMessage<Response>(&arena_)) {}

  UnaryCall(const UnaryCall&) = delete;
  UnaryCall& operator=(const UnaryCall&) = delete;

  grpc::ServerUnaryReactor* reactor() const { return reactor_; }
  Request& request() { return *request_; }
  Response* response() { return response_; }

  // Finishes the call with `status` unless it is finished already: runs
  // `fill` first (if any), serializes the response when the status is OK,
  // records the call and finishes the reactor. Returns whether it finished.
  template <typename Fill>
  bool Finish(absl::Status status, Fill&& fill) {
    if (finished_.exchange(true)) return false;
    fill();
    if (status.ok()) status = SerializeResponse(*response_, response_bytes_);
    service_->RecordRequest(method_, status.code(), SecondsSince(start_));
    reactor_->Finish(service_->ToCallerStatus(method_, status));
    return true;
  }
  bool Finish(const absl::Status& status) {
    return Finish(status, [] {});
  }

  bool finished() const { return finished_.load(); }

 private:
  const Service* const service_;
  grpc::ServerUnaryReactor* const reactor_;
  const std::string_view method_;  // a literal
  grpc::ByteBuffer* const response_bytes_;
  const std::chrono::steady_clock::time_point start_;
  std::atomic<bool> finished_{false};
  google::protobuf::Arena arena_;
  Request* const request_;
  Response* const response_;
};

}  // namespace clickd

#endif  // CLICKD_SERVER_UNARY_CALL_H_
