// Request limits of the service, set by flags. Exceeding one is
// RESOURCE_EXHAUSTED with a message naming the field, the count and the limit.
//
// Limits extends wire's ExampleLimits (features and namespaces per example,
// name bytes), which ToExample checks, so that the server passes its limits
// to the conversion as they are and wire never includes server/.
#ifndef CLICKD_SERVER_LIMITS_H_
#define CLICKD_SERVER_LIMITS_H_

#include <cstddef>
#include <cstdint>

#include "wire/example_proto.h"

namespace clickd {

struct Limits : ExampleLimits {
  size_t max_candidates = 1000;  // per Predict
  // Features after the model's interactions, dense values included
  // (server/request_cost.h): per example (a candidate with its context),
  // and per request (Predict, or an Update message).
  uint64_t max_features_after_interactions = 65536;
  uint64_t max_features_per_request = 4'000'000;
  // A Predict that yields at most this many features after interactions is
  // scored on the gRPC thread that received it (0: never): handing it to a
  // worker costs a thread switch, about 120 us at 1 in flight on the 2-core
  // benchmark machine, which is more than scoring it (docs/limits.md).
  uint64_t max_inline_predict_features = 1024;
  // A larger Predict, up to this many features, is scored there too while
  // the executor is idle and no other such Predict is (0: never): at low
  // load the hand-over costs a 100-candidate Predict a tenth or more of
  // its latency (server/inline_lease.h). 16384 features take well under
  // 1 ms to score.
  uint64_t max_quiet_inline_predict_features = 16384;
  // An Update or stream message (UpdateStream, UpdateStreamAcked) of at most
  // this many features after interactions, on a memory-only model of this
  // process, is learned on the gRPC thread that received it while no other
  // large work holds a gRPC thread and no long call learns on that model
  // (0: never): the hand-over to a worker and back costs a stream about a
  // tenth of its throughput (ClickdService::PlaceUpdate,
  // docs/performance_rpc.md).
  uint64_t max_inline_update_features = 16384;
  // UpdateRequest.idempotency_key (it becomes part of a NATS message id).
  size_t max_idempotency_key_bytes = 128;
  size_t max_examples_per_update = 10000;  // per Update request (or stream message)
  size_t max_feedback_items = 10000;       // per Feedback request
  // How far past the server's clock a feedback item's event time may be.
  int max_event_time_skew_seconds = 300;
  uint32_t max_explain_top_k = 100;  // PredictRequest.explain_top_k
  // The memory a CreateModel's config commits before the model learns
  // anything (CheckModelFixedBytes): feature admission's counters and the
  // compact tables' directories, for the primary and every variant.
  uint64_t max_model_fixed_bytes = uint64_t{1} << 30;
  // The dense learner's work an Update (or stream message) may ask for, in
  // multiply-adds (CheckDenseWork): its examples with dense values times
  // one step's cost at the model's dimension (ada_full: d^3).
  uint64_t max_dense_work_per_update = uint64_t{1} << 32;
  // The factor rows an Update (or stream message) may add to a model with
  // factors, in bytes: its features of factorization.fields times a row's
  // bytes (CheckFactorRows, server/update_request.cc).
  uint64_t max_factor_bytes_per_update = uint64_t{64} << 20;
  int max_message_bytes = 16 << 20;
  // Streaming calls open at once, server-wide (server/stream_limit.h): each
  // holds at most one message of max_message_bytes.
  uint64_t max_open_streams = 256;
  // Connections (server/descriptors.h): one that has not sent its HTTP/2
  // settings within the handshake timeout, or has had no call for the idle
  // time, is closed, so that idle connections do not hold descriptors.
  int handshake_timeout_seconds = 10;
  int max_connection_idle_seconds = 300;
  // A streaming call waiting this long for its caller's next message is
  // cancelled (server/stream_idle.h), so idle streams do not hold
  // max_open_streams' places.
  int stream_idle_timeout_seconds = 120;
  // GetModel state_digests computed at once, server-wide: each holds a
  // point-in-time copy of its model's coordinates until it is done, so
  // this bounds their memory at this many copies (server/get_model_digest.h).
  uint64_t max_concurrent_digests = 1;
};

}  // namespace clickd

#endif  // CLICKD_SERVER_LIMITS_H_
