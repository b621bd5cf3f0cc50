// ClickdClient: the C++ client library of the clickd.v1.Clickd service, a
// thin layer over the generated gRPC stub that returns absl::Status /
// absl::StatusOr, puts a deadline on every call, and retries the idempotent
// calls on UNAVAILABLE with jittered exponential backoff inside the call's
// deadline: Predict without log_impressions, and Feedback (the server joins
// one label per impression). An Update is retried only with an
// idempotency_key (then on DEADLINE_EXCEEDED too: the server does not learn
// a key twice); a Predict that logs impressions never is. docs/client.md
// shows how to use it.
//
// Thread safety: a ClickdClient is safe for concurrent use by any number of
// threads; its options are fixed at creation. An UpdateStreamWriter is
// externally synchronized: one thread writes to it and finishes it.
// PredictAsync callbacks run on gRPC's threads and must not block. The
// destructor waits for outstanding PredictAsync callbacks (each bounded by
// its call's deadline), so never destroy a client from one of them.
#ifndef CLICKD_CLIENT_CLICKD_CLIENT_H_
#define CLICKD_CLIENT_CLICKD_CLIENT_H_

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "clickd/v1/clickd.grpc.pb.h"

namespace clickd {

// The one place where a grpc::Status becomes an absl::Status: the canonical
// codes are the same numbers in both.
absl::Status FromGrpcStatus(const grpc::Status& status);

// How Predict and Feedback retry UNAVAILABLE (and a keyed Update or Feedback
// DEADLINE_EXCEEDED too, each attempt then with a deadline of its own, so
// such a call may take up to max_attempts timeouts plus the backoffs).
// Attempt k (k = 1, 2, ...) that fails is
// followed by a sleep of min(initial_backoff * multiplier^(k-1), max_backoff)
// times a uniform factor in [1 - jitter, 1 + jitter], unless that sleep
// would reach the call's deadline, in which case the last UNAVAILABLE is
// returned at once.
struct RetryPolicy {
  int max_attempts = 3;  // including the first; 1 disables retries
  absl::Duration initial_backoff = absl::Milliseconds(50);
  double multiplier = 2.0;
  absl::Duration max_backoff = absl::Seconds(1);
  double jitter = 0.2;
};

struct ClientOptions {
  // Deadline of every call, counted from its start; for Predict it covers
  // all attempts and backoffs, for UpdateStream the whole stream.
  absl::Duration timeout = absl::Seconds(5);
  RetryPolicy predict_retry;
  // Sleeps between Predict attempts; tests replace it. Unset: absl::SleepFor.
  std::function<void(absl::Duration)> sleep;
};

// Per-call overrides.
struct CallOptions {
  std::optional<absl::Duration> timeout;  // instead of ClientOptions::timeout
  // Wait (within the deadline) for the channel to connect instead of failing
  // fast with UNAVAILABLE while the server is unreachable.
  bool wait_for_ready = false;
};

// One client-streaming UpdateStream call: Write messages, then Finish for
// the server's summary. Destroying an unfinished writer cancels the stream
// (messages already received by the server stay applied).
class UpdateStreamWriter {
 public:
  UpdateStreamWriter(const UpdateStreamWriter&) = delete;
  UpdateStreamWriter& operator=(const UpdateStreamWriter&) = delete;
  ~UpdateStreamWriter();

  // Sends one message (blocking under flow control, within the deadline).
  // Returns false once the stream is broken: the server ended it with an
  // error or the deadline passed. Finish then says why.
  bool Write(const v1::UpdateRequest& request);

  // Closes the stream and returns the server's summary or the stream's error.
  // Call once.
  absl::StatusOr<v1::UpdateStreamResponse> Finish();

 private:
  friend class ClickdClient;
  UpdateStreamWriter() = default;

  grpc::ClientContext context_;
  v1::UpdateStreamResponse response_;
  std::unique_ptr<grpc::ClientWriter<v1::UpdateRequest>> writer_;
  bool finished_ = false;
};

// One UpdateStreamAcked call: each Send writes a message and waits for its
// ack, so that after a failure the caller knows exactly which messages the
// server acknowledged (all those whose Send returned an ack). Destroying an
// unfinished stream cancels it.
class AckedUpdateStream {
 public:
  AckedUpdateStream(const AckedUpdateStream&) = delete;
  AckedUpdateStream& operator=(const AckedUpdateStream&) = delete;
  ~AckedUpdateStream();

  // Sends one message and returns its ack, or the stream's error (the
  // server's status, or UNAVAILABLE if the connection broke). After an
  // error the stream is finished.
  absl::StatusOr<v1::UpdateAck> Send(const v1::UpdateRequest& request);

  // Closes the stream; returns its final status. Call once, unless a Send
  // failed (then the stream is already finished).
  absl::Status Finish();

 private:
  friend class ClickdClient;
  AckedUpdateStream() = default;
  absl::Status FinishWithError();

  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::UpdateRequest, v1::UpdateAck>> stream_;
  bool finished_ = false;
};

// Client-side hashing: the keys form of the wire (Namespace.keys,
// docs/hashing.md), so that the server skips hashing. Keys depend on the
// model's hashing seed (ModelConfig.hashing.seed): hash for the model a
// request goes to. Immutable; safe for concurrent use.
class KeyHasher {
 public:
  explicit KeyHasher(uint64_t seed) : seed_(seed) {}
  // For the model `info` describes (GetModel, CreateModel).
  static KeyHasher ForModel(const v1::ModelInfo& info) {
    return KeyHasher(info.config().hashing().seed());
  }

  uint64_t seed() const { return seed_; }
  // XXH3_64(name, seed).
  uint64_t NamespaceHash(std::string_view name) const;
  // XXH3_64(name, namespace hash): the key of a named feature.
  static uint64_t NamedKey(uint64_t namespace_hash, std::string_view name);
  // XXH3_64(id as 8 little-endian bytes, namespace hash): an id's key.
  static uint64_t IdKey(uint64_t namespace_hash, uint64_t id);

  // `example` with every feature (Feature messages, packed names and ids,
  // keys already there) as keys and key_values, namespace by namespace in
  // the order the server reads them; key_values is left empty when every
  // value is 1. Dense values are kept. InvalidArgument for what hashing
  // cannot key: a Feature with neither name nor id, an empty name, packed
  // values as many as neither their names nor 0. Values are not checked
  // here: the server checks them (as key_values[i]).
  absl::StatusOr<v1::Example> Hash(const v1::Example& example) const;

 private:
  uint64_t seed_;
};

// A Predict context hashed once (KeyHasher::Hash) and reused by many
// requests: each request copies its keys, packed, and nothing is hashed
// again on either side. Immutable; safe for concurrent use.
class HashedPredictContext {
 public:
  static absl::StatusOr<HashedPredictContext> Create(const KeyHasher& hasher,
                                                     const v1::Example& context);

  const v1::Example& context() const { return context_; }

  // `request` with this context and its candidates hashed into keys (a
  // candidate already in keys form is kept as it is).
  absl::StatusOr<v1::PredictRequest> Request(v1::PredictRequest request) const;

 private:
  HashedPredictContext(KeyHasher hasher, v1::Example context)
      : hasher_(hasher), context_(std::move(context)) {}

  KeyHasher hasher_;
  v1::Example context_;
};

class ClickdClient {
 public:
  using PredictCallback = std::function<void(absl::StatusOr<v1::PredictResponse>)>;

  // Connects (lazily, on the first call) to "host:port" over an insecure
  // channel whose reconnect backoff follows options.predict_retry, so that
  // retries can reach a server that comes back. InvalidArgument for bad
  // options.
  static absl::StatusOr<std::unique_ptr<ClickdClient>> Create(const std::string& target,
                                                              ClientOptions options = {});
  // Uses a channel made by the caller (credentials, interceptors, args).
  static absl::StatusOr<std::unique_ptr<ClickdClient>> CreateWithChannel(
      std::shared_ptr<grpc::ChannelInterface> channel, ClientOptions options = {});

  ~ClickdClient();

  // Scores candidates; retried on UNAVAILABLE per the retry policy, unless
  // request.log_impressions: an attempt whose reply was lost may have logged
  // its impressions, and their ids would be lost with it, so they could
  // never be labelled (under wait_negative each would be learned as a
  // negative at its TTL). One attempt then, as an Update.
  absl::StatusOr<v1::PredictResponse> Predict(const v1::PredictRequest& request,
                                              const CallOptions& call = {}) const;

  // Labels impressions that Predict logged; retried on UNAVAILABLE per the
  // retry policy. A retry cannot teach a label twice: the server joins one
  // label per impression, so an item that a lost attempt joined comes back
  // FEEDBACK_ALREADY_LABELLED.
  absl::StatusOr<v1::FeedbackResponse> Feedback(const v1::FeedbackRequest& request,
                                                const CallOptions& call = {}) const;

  // Predict on the gRPC callback API, one attempt (no retry: at high rates
  // the caller decides what a failure costs). Returns at once; `done` runs
  // exactly once, on a gRPC thread, with the response or the error. The
  // client owns the call's context, request and response until then.
  void PredictAsync(v1::PredictRequest request, PredictCallback done,
                    const CallOptions& call = {}) const;

  // Learns examples. Without an idempotency_key never retried: an Update
  // whose reply was lost may have been applied, and applying it twice would
  // teach the model twice. With one, retried on UNAVAILABLE and
  // DEADLINE_EXCEEDED: a retry of a learned key is answered duplicate.
  absl::StatusOr<v1::UpdateResponse> Update(const v1::UpdateRequest& request,
                                            const CallOptions& call = {}) const;

  // Opens an UpdateStream; its deadline bounds the whole stream. A failure
  // to open shows up as Write returning false and Finish's error.
  std::unique_ptr<UpdateStreamWriter> OpenUpdateStream(const CallOptions& call = {}) const;

  // Opens an UpdateStreamAcked; its deadline bounds the whole stream.
  std::unique_ptr<AckedUpdateStream> OpenAckedUpdateStream(const CallOptions& call = {}) const;

  absl::StatusOr<v1::ModelInfo> CreateModel(const v1::ModelConfig& config,
                                            const CallOptions& call = {}) const;
  absl::StatusOr<v1::ModelInfo> GetModel(const std::string& name,
                                         const CallOptions& call = {}) const;
  absl::StatusOr<std::vector<v1::ModelInfo>> ListModels(const CallOptions& call = {}) const;
  absl::Status DeleteModel(const std::string& name, const CallOptions& call = {}) const;
  // Writes a snapshot of the model now (the server needs --data_dir).
  absl::StatusOr<v1::SnapshotModelResponse> SnapshotModel(const std::string& name,
                                                          const CallOptions& call = {}) const;
  // The model's state digest (ModelInfo.state_digest; reads the whole model).
  absl::StatusOr<std::string> StateDigest(const std::string& name,
                                          const CallOptions& call = {}) const;

 private:
  ClickdClient(std::shared_ptr<grpc::ChannelInterface> channel, ClientOptions options);

  // Sets the deadline (now + the call's timeout) and wait_for_ready.
  void Prepare(const CallOptions& call, grpc::ClientContext* context) const;
  absl::Duration Timeout(const CallOptions& call) const;
  // Runs one unary call with a fresh context; `rpc` calls the stub.
  template <typename Response, typename Rpc>
  absl::StatusOr<Response> Unary(const CallOptions& call, Rpc&& rpc) const;
  // Runs a unary call, retried on UNAVAILABLE per options_.predict_retry
  // within one deadline for all attempts and backoffs. A `keyed` call (an
  // Update or Feedback with an idempotency key) is retried on
  // DEADLINE_EXCEEDED too, each attempt with a deadline of its own.
  template <typename Response, typename Rpc>
  absl::StatusOr<Response> Retried(const CallOptions& call, Rpc&& rpc, bool keyed = false) const;

  // Counts PredictAsync calls whose callback has not returned yet.
  void AsyncStarted() const;
  void AsyncDone() const;

  const std::unique_ptr<v1::Clickd::Stub> stub_;
  const ClientOptions options_;
  // std::mutex rather than the annotated clickd::Mutex: the destructor waits
  // on a condition variable.
  mutable std::mutex async_mu_;
  mutable std::condition_variable async_idle_;
  mutable int64_t async_outstanding_ = 0;  // guarded by async_mu_
};

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKD_CLIENT_H_
