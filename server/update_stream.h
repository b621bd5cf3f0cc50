// The two streaming update calls of ClickdService:
//   UpdateStream       client streaming; one summary when the client closes.
//   UpdateStreamAcked  bidirectional; one UpdateAck per request, sent once
//                      the request is applied and durable, so a client that
//                      loses the server mid-stream knows what was kept.
// In both, every message must name the stream's model, each message is all
// or nothing, and a rejected message ends the stream with its error (the
// messages before it stay applied). Messages arrive as bytes (the service's
// methods are raw) and are parsed here: an unparsable one ends the stream
// with INVALID_ARGUMENT, not as if the client had closed it.
#ifndef CLICKD_SERVER_UPDATE_STREAM_H_
#define CLICKD_SERVER_UPDATE_STREAM_H_

#include "clickd/v1/clickd.grpc.pb.h"

namespace clickd {

class ClickdService;

// `response` receives the serialized UpdateStreamResponse.
grpc::ServerReadReactor<grpc::ByteBuffer>* NewUpdateStreamReactor(
    ClickdService* service, grpc::CallbackServerContext* context, grpc::ByteBuffer* response);

// Reads UpdateRequest bytes, writes UpdateAck bytes.
grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NewAckedUpdateStreamReactor(
    ClickdService* service, grpc::CallbackServerContext* context);

}  // namespace clickd

#endif  // CLICKD_SERVER_UPDATE_STREAM_H_
