// Request and response bytes of the service's raw (ByteBuffer) methods.
//
// clickd registers every clickd.v1 method raw and parses requests itself:
// when gRPC's generated callback handler cannot parse a request, it answers
// UNIMPLEMENTED with an empty message (and the same for a handler that
// throws), which tells a caller nothing. ParseRequest answers
// INVALID_ARGUMENT naming the message type instead.
#ifndef CLICKD_SERVER_RAW_MESSAGE_H_
#define CLICKD_SERVER_RAW_MESSAGE_H_

#include <grpcpp/support/byte_buffer.h>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace clickd {

// Parses `bytes` into `out`; InvalidArgument "the request is not a valid
// clickd.v1.PredictRequest (N bytes)" if they are not one.
absl::Status ParseRequest(const grpc::ByteBuffer& bytes, google::protobuf::Message* out);

// Serializes `message` into `out`; Internal if it cannot be.
absl::Status SerializeResponse(const google::protobuf::Message& message, grpc::ByteBuffer* out);

}  // namespace clickd

#endif  // CLICKD_SERVER_RAW_MESSAGE_H_
