// GetModel with state_digest, as ClickdService runs it on its executor.
//
// Two steps, so that the model's learners wait microseconds, not for the
// whole model:
//   1. On a worker under the model's executor key (its learners are held
//      off there): Model::BeginStateCopy marks a point-in-time copy
//      (copy-on-write; an eager copy if a snapshot's copy is open).
//   2. On a worker without a key (learners go on): StateDigestUnless reads
//      the copy shard by shard, sorts, merges and hashes it in bounded steps
//      (core/model/state_digest.h). Between steps it stops with
//      DEADLINE_EXCEEDED once the call's deadline has passed, and with
//      UNAVAILABLE once a shutdown began (Executor::BeginDrain), so that a
//      digest holds neither a worker past its deadline nor the drain.
// The memory is one copy of the coordinates (the sorted copy while it is
// encoded); out of memory fails the call, never the process.
// The call is finished exactly once, by whichever comes first: the worker,
// or an alarm at the call's deadline with DEADLINE_EXCEEDED (so the call
// ends on time even while step 1 still waits for the key). The workers never
// touch the request, the context or the response once the call is finished
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
