// GetModel with state_digest, as ClickdService runs it on its executor.
//
// The digest reads every coordinate under its shard's lock, so it may wait
// for the model's learners; it runs on a worker under the model's executor
// key, never on a gRPC thread. The call is finished exactly once, by
// whichever comes first: the worker with the digest, or an alarm at the
// call's deadline with DEADLINE_EXCEEDED (so the call ends on time even
// while the digest still waits). The worker never touches the request, the
// context or the response once the alarm has finished the call
// (UnaryCall::Finish claims the call once).
#ifndef CLICKD_SERVER_GET_MODEL_DIGEST_H_
#define CLICKD_SERVER_GET_MODEL_DIGEST_H_

#include <memory>

#include "clickd/v1/clickd.grpc.pb.h"
#include "server/unary_call.h"

namespace clickd {

class ClickdService;

using GetModelCall = UnaryCall<ClickdService, v1::GetModelRequest, v1::GetModelResponse>;

// Runs `call` (parsed, access checked) to its finish.
void GetModelWithDigest(ClickdService* service, grpc::CallbackServerContext* context,
                        std::shared_ptr<GetModelCall> call);

}  // namespace clickd

#endif  // CLICKD_SERVER_GET_MODEL_DIGEST_H_
