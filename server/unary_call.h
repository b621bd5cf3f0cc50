// UnaryCall: one raw unary call of ClickdService in flight: its request and
// response messages (on one protobuf arena, freed when the last holder of
// the call lets go) and its single finish.
//
// The arena is what gRPC's callback MessageAllocator would give a
// generated method (the suggestion); the service's methods are raw
// (ByteBuffer) and parse their own requests (server/raw_message.h), so the
// call owns the arena instead. Its first block is part of the call, so a
// typical request (a Predict of a few hundred features) and its response
// take no malloc for messages; larger ones grow it in blocks of up to
// kMaxArenaBlockBytes.
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
        arena_(ArenaOptionsFor(initial_block_, sizeof(initial_block_))),
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

  static constexpr size_t kInitialArenaBytes = 8 << 10;
  static constexpr size_t kMaxArenaBlockBytes = 64 << 10;

 private:
  static google::protobuf::ArenaOptions ArenaOptionsFor(char* block, size_t size) {
    google::protobuf::ArenaOptions options;
    options.initial_block = block;
    options.initial_block_size = size;
    options.start_block_size = kInitialArenaBytes;
    options.max_block_size = kMaxArenaBlockBytes;
    return options;
  }

  const Service* const service_;
  grpc::ServerUnaryReactor* const reactor_;
  const std::string_view method_;  // a literal
  grpc::ByteBuffer* const response_bytes_;
  const std::chrono::steady_clock::time_point start_;
  std::atomic<bool> finished_{false};
  // Declared before the arena, which uses it: the arena's first block.
  alignas(8) char initial_block_[kInitialArenaBytes];
  google::protobuf::Arena arena_;
  Request* const request_;
  Response* const response_;
};

}  // namespace clickd

#endif  // CLICKD_SERVER_UNARY_CALL_H_
