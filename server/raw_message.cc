#include "server/raw_message.h"

#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include "absl/strings/str_cat.h"

namespace clickd {

absl::Status ParseRequest(const grpc::ByteBuffer& bytes, google::protobuf::Message* out) {
  if (!bytes.Valid()) {  // no payload at all: the empty message
    out->Clear();
    return absl::OkStatus();
  }
  grpc::ByteBuffer copy(bytes);  // shares the slices; the reader needs a mutable buffer
  grpc::ProtoBufferReader reader(&copy);
  if (reader.status().ok() && out->ParseFromZeroCopyStream(&reader)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("the request is not a valid ",
                                                 out->GetDescriptor()->full_name(), " (",
                                                 bytes.Length(), " bytes)"));
}

absl::Status SerializeResponse(const google::protobuf::Message& message, grpc::ByteBuffer* out) {
  out->Clear();  // the writer needs an empty buffer
  const size_t size = message.ByteSizeLong();
  grpc::ProtoBufferWriter writer(out, grpc::kProtoBufferWriterMaxBufferLength,
                                 static_cast<int>(size));
  if (message.SerializeToZeroCopyStream(&writer)) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("cannot serialize the ", message.GetDescriptor()->full_name(), " response"));
}

}  // namespace clickd
