// The two streaming update calls of ClickdService:
//   UpdateStream       client streaming; one summary when the client closes.
//   UpdateStreamAcked  bidirectional; one UpdateAck per request, sent once
//                      the request is applied and durable, so a client that
//                      loses the server mid-stream knows what was kept.
// In both, every message must name the stream's model, each message is all
// or nothing, and a rejected message ends the stream with its error (the
// messages before it stay applied).
#ifndef CLICKD_SERVER_UPDATE_STREAM_H_
#define CLICKD_SERVER_UPDATE_STREAM_H_

#include "clickd/v1/clickd.grpc.pb.h"

namespace clickd {

class ClickdService;

grpc::ServerReadReactor<v1::UpdateRequest>* NewUpdateStreamReactor(
    ClickdService* service, grpc::CallbackServerContext* context,
    v1::UpdateStreamResponse* response);

grpc::ServerBidiReactor<v1::UpdateRequest, v1::UpdateAck>* NewAckedUpdateStreamReactor(
    ClickdService* service, grpc::CallbackServerContext* context);

}  // namespace clickd

#endif  // CLICKD_SERVER_UPDATE_STREAM_H_
