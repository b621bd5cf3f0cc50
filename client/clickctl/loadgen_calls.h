// The RPCs `clickctl loadgen` measures, as CallIssuers (loadgen_runner.h)
// over one channel, plus the UpdateStream measurement, which is one long
// call rather than many short ones.
//
// Every issuer cycles through a pool of prebuilt requests, so that building
// requests stays out of the timed path, and checks each response's shape
// (one prediction per candidate, every example applied, SERVING): a
// malformed response counts as an INTERNAL error.
//
// Thread safety: an issuer is safe for concurrent Start calls; its pool is
// immutable.
#ifndef CLICKD_CLIENT_CLICKCTL_LOADGEN_CALLS_H_
#define CLICKD_CLIENT_CLICKCTL_LOADGEN_CALLS_H_

#include <grpcpp/channel.h>

#include <memory>
#include <vector>

#include "clickd/v1/clickd.pb.h"
#include "client/clickctl/loadgen_runner.h"

namespace clickd {

// clickd.v1.Clickd/Predict.
std::unique_ptr<CallIssuer> NewPredictIssuer(std::shared_ptr<grpc::Channel> channel,
                                             std::vector<v1::PredictRequest> pool);

// clickd.v1.Clickd/Update.
std::unique_ptr<CallIssuer> NewUpdateIssuer(std::shared_ptr<grpc::Channel> channel,
                                            std::vector<v1::UpdateRequest> pool);

// grpc.health.v1.Health/Check for the whole server (an empty request), the
// near-null RPC that the others are compared with. It goes through
// grpc::GenericStub with hand-encoded bytes, so clickctl links no second copy
// of the health proto.
std::unique_ptr<CallIssuer> NewHealthIssuer(std::shared_ptr<grpc::Channel> channel);

// Sends the pool's messages in turn, cycling, over one UpdateStream whose
// deadline is warmup + duration + options.deadline; stops after the window
// or options.max_requests measured messages, then closes the stream and
// waits for the server's summary. requests counts measured messages, units
// their examples (when the stream succeeds), latency how long each measured
// Write blocked under flow control (not a server latency); seconds runs from
// the end of the warmup until the summary arrived. A failed stream is one
// error of its code. concurrency and target_qps are ignored. With
// options.idempotency_key_prefix, message i carries the key prefix + i (a
// copy of the pool is why it is taken by value).
LoadResult RunUpdateStream(const std::shared_ptr<grpc::Channel>& channel,
                           std::vector<v1::UpdateRequest> pool, const LoadOptions& options);

// The examples one UpdateRequest teaches.
uint64_t ExamplesIn(const v1::UpdateRequest& request);

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_LOADGEN_CALLS_H_
