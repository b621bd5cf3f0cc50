// FeedbackStream: the streamed form of Feedback (bidirectional). Each
// FeedbackRequest is checked and applied as a unary Feedback would be, and
// answered with its FeedbackResponse once applied and durable; the next
// message is read only then, so answers come in request order. Messages
// may name any model. A rejected message ends the stream with its error,
// prefixed by its index ("message 3: ..."); the messages before it stay
// applied. An unparsable message ends it with INVALID_ARGUMENT.
#ifndef CLICKD_SERVER_FEEDBACK_STREAM_H_
#define CLICKD_SERVER_FEEDBACK_STREAM_H_

#include "clickd/v1/clickd.grpc.pb.h"

namespace clickd {

class ClickdService;

// Reads FeedbackRequest bytes, writes FeedbackResponse bytes.
grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NewFeedbackStreamReactor(
    ClickdService* service, grpc::CallbackServerContext* context);

}  // namespace clickd

#endif  // CLICKD_SERVER_FEEDBACK_STREAM_H_
