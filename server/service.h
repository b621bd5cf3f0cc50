// ClickdService: the clickd.v1.Clickd gRPC service on the callback API.
//
// Thin by design: each handler converts the request (wire/),
// calls core (core/model/serving.h, core/serving/registry.h) and converts the
// status once, after checking the call's deadline.
//
// Isolation: the handlers only hand the call's work to the executor
// (server/executor.h) and return; a worker runs it and finishes the call,
// so gRPC's callback threads (which also serve the health service) never
// wait for a model. Work that can wait on one model's locks (Update and
// stream messages, GetModel with state_digest, DeleteModel) carries the
// model's name as its executor key, so one busy model cannot take every
// worker. Before any work, a request's cost (features after interactions,
// server/request_cost.h) is checked against the limits. GetModel without
// state_digest reads the model's cached statistics and never waits for a
// learner; with it, the call ends at its deadline even while the digest
// waits (server/get_model_digest.h). SnapshotModel runs on the
// snapshotter's own thread. The one exception: a small Predict (at most
// Limits::max_inline_predict_features features after interactions) is
// scored on the gRPC thread, since handing it over costs more than scoring
// it; it takes no model-wide lock and waits at most for one learner's step
// on a shard it reads. So is one larger Predict at a time (up to
// Limits::max_quiet_inline_predict_features) while the executor is idle
// (server/inline_lease.h), or, in its place, one small Update or stream
// message on a memory-only model that no long call learns on
// (PlaceUpdate). Without an executor (unit tests), work runs on the
// calling thread.
//
// Every finished call, failures included, is recorded in the request
// metrics (server/metrics/rpc_metrics.h) when the service has them.
//
// Every handler first checks access (server/auth/call_auth.h): whether the
// method is served on this address and whether the caller's role allows it.
//
// Every method is registered raw (ByteBuffer in and out) and parses its
// request itself (server/raw_message.h, server/unary_call.h): gRPC's typed
// handler answers a request it cannot parse with UNIMPLEMENTED and no
// message, and ends a stream at an unparsable message as if the client had
// closed it. Here the caller gets INVALID_ARGUMENT naming the message type.
// An exception from the work becomes INTERNAL (RESOURCE_EXHAUSTED for
// std::bad_alloc) with a message, instead of the same empty UNIMPLEMENTED.
// Messages callers see never hold the data directory's path (ToCallerStatus).
//
// Thread safety: safe for concurrent calls; all shared state is in the
// registry, the models and the metrics, which synchronize themselves.
#ifndef CLICKD_SERVER_SERVICE_H_
#define CLICKD_SERVER_SERVICE_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "clickd/v1/clickd.grpc.pb.h"
#include "core/serving/registry.h"
#include "server/auth/call_auth.h"
#include "server/executor.h"
#include "server/inline_lease.h"
#include "server/limits.h"
#include "server/metrics/rpc_metrics.h"
#include "server/model_writer.h"
#include "server/request_cost.h"
#include "server/snapshotter.h"
#include "server/stream_idle.h"
#include "server/stream_limit.h"
#include "server/unary_call.h"

namespace clickd {

// The generated service with every method registered raw.
using RawClickdService = v1::Clickd::WithRawCallbackMethod_Predict<
    v1::Clickd::WithRawCallbackMethod_Update<v1::Clickd::WithRawCallbackMethod_UpdateStream<
        v1::Clickd::WithRawCallbackMethod_UpdateStreamAcked<
            v1::Clickd::WithRawCallbackMethod_CreateModel<
                v1::Clickd::WithRawCallbackMethod_GetModel<
                    v1::Clickd::WithRawCallbackMethod_ListModels<
                        v1::Clickd::WithRawCallbackMethod_DeleteModel<
                            v1::Clickd::WithRawCallbackMethod_SnapshotModel<
                                v1::Clickd::WithRawCallbackMethod_Feedback<
                                    v1::Clickd::WithRawCallbackMethod_FeedbackStream<
                                        v1::Clickd::Service>>>>>>>>>>>;

// What placing a call learned of its request, carried to the call's work
// so that the model is looked up and the request's features counted once
// per call.
struct CallPlan {
  // The model the request names, if it was looked up (null: not looked up,
  // or not found; the work looks it up and answers NOT_FOUND).
  std::shared_ptr<ServedModel> served;
  // The request's cost against the limits, counted for `served`.
  std::optional<RequestCost> cost;
  const RequestCost* counted() const { return cost.has_value() ? &*cost : nullptr; }
};

// Where a unary call's work runs (ClickdService::Unary), and its plan.
struct CallPlacement {
  // Held: the work runs on the gRPC thread that received the call. Else on
  // a worker, as light work (Executor::Task::light) if `light`.
  InlineLease here;
  bool light = false;
  CallPlan plan;
  explicit operator bool() const { return static_cast<bool>(here); }
};

// The default of ClickdService::Unary: every call's work goes to the executor.
struct RunOnExecutor {
  CallPlacement operator()(const google::protobuf::Message&) const { return {}; }
};

// What a ClickdService is built from. Every pointer, if set, must outlive
// the service (and the executor, the calls).
struct ClickdServiceOptions {
  ModelRegistry* registry = nullptr;  // required
  Limits limits;
  // Runs after every successful create or delete (the server keeps the
  // health status current with it). May be empty.
  std::function<void()> on_models_changed;
  metrics::RpcMetrics* rpc_metrics = nullptr;  // null: no RPC metrics
  // Runs SnapshotModel off the gRPC threads (null: on the calling thread).
  Snapshotter* snapshotter = nullptr;
  // Runs every call's work (null: on the calling thread).
  Executor* executor = nullptr;
  // Which methods this instance serves and who may call them (by default:
  // all, to everyone).
  auth::AccessControl access;
  // Makes every change to models (creates, deletes, learning: the
  // replicated log, server/replicated_model_writer.h); null: the registry
  // and the models' own journals do (LocalModelWriter).
  ModelWriter* writer = nullptr;
};

class ClickdService final : public RawClickdService {
 public:
  explicit ClickdService(ClickdServiceOptions options);

  // The model_version a Predict on `served` reports now.
  uint64_t ModelVersion(const ServedModel& served) const { return writer_->Version(served); }

  // Streams of this service open now (OpenStream's tickets not yet released).
  uint64_t open_streams() const { return open_streams_.open(); }

  using Bytes = grpc::ByteBuffer;
  grpc::ServerUnaryReactor* Predict(grpc::CallbackServerContext* context, const Bytes* request,
                                    Bytes* response) override;
  grpc::ServerUnaryReactor* Update(grpc::CallbackServerContext* context, const Bytes* request,
                                   Bytes* response) override;
  grpc::ServerReadReactor<Bytes>* UpdateStream(grpc::CallbackServerContext* context,
                                               Bytes* response) override;
  grpc::ServerUnaryReactor* Feedback(grpc::CallbackServerContext* context, const Bytes* request,
                                     Bytes* response) override;
  grpc::ServerBidiReactor<Bytes, Bytes>* FeedbackStream(
      grpc::CallbackServerContext* context) override;
  grpc::ServerBidiReactor<Bytes, Bytes>* UpdateStreamAcked(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* SnapshotModel(grpc::CallbackServerContext* context,
                                          const Bytes* request, Bytes* response) override;
  grpc::ServerUnaryReactor* CreateModel(grpc::CallbackServerContext* context, const Bytes* request,
                                        Bytes* response) override;
  grpc::ServerUnaryReactor* GetModel(grpc::CallbackServerContext* context, const Bytes* request,
                                     Bytes* response) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context, const Bytes* request,
                                       Bytes* response) override;
  grpc::ServerUnaryReactor* DeleteModel(grpc::CallbackServerContext* context, const Bytes* request,
                                        Bytes* response) override;

  // Validates and learns one UpdateRequest (a unary call or one stream
  // message) on `served`; all or nothing. Appends the pre-update scores.
  // `counted`, if set, is the request's cost counted where it was placed.
  absl::Status ApplyUpdate(ServedModel& served, const v1::UpdateRequest& request,
                           v1::UpdateResponse* response, std::vector<ScoredExample>* scored,
                           const RequestCost* counted = nullptr);

  // A unary Update on a writer that learns asynchronously (a replica):
  // validated on a worker, which then moves on; the call is answered when
  // the replicated log acknowledged and this replica applied the batch.
  using UpdateCall = UnaryCall<ClickdService, v1::UpdateRequest, v1::UpdateResponse>;
  grpc::ServerUnaryReactor* UpdateWithoutWaiting(grpc::CallbackServerContext* context,
                                                 const Bytes* request, Bytes* response);
  absl::Status StartUpdate(const std::shared_ptr<UpdateCall>& call, const CallPlan& plan);
  // Whether UpdateWithoutWaiting checks and sends `request` on the gRPC
  // thread that received it: if it is small (max_inline_update_features)
  // and no other inline work holds inline_slot_. Not PlaceUpdate: under
  // replication a stream message still waits for its record on the thread
  // that learns it, which must then be a worker, never a gRPC thread.
  CallPlacement SendsInline(const v1::UpdateRequest& request);

  // Remembers a scored Predict's candidates as impressions; the first id.
  absl::StatusOr<uint64_t> LogImpressions(ServedModel& served, const HashedCandidates& hashed,
                                          absl::Span<const CandidateScore> scores);
  // Validates and applies one FeedbackRequest.
  absl::Status ApplyFeedback(const v1::FeedbackRequest& request, v1::FeedbackResponse* response);
  // Validates and scores one PredictRequest, on the model and at the cost
  // its placement found, if it looked.
  absl::Status ScorePredictRequest(const v1::PredictRequest& request, v1::PredictResponse* response,
                                   const CallPlan& plan = {});

  // What GetModel and ListModels say of `served`: its ModelInfo and, on a
  // replica, the replica's health.
  v1::ModelInfo Describe(const ServedModel& served) const;

  // The named model, or NotFound / InvalidArgument naming `field`.
  absl::StatusOr<std::shared_ptr<ServedModel>> Lookup(const std::string& name,
                                                      const char* field) const;

  // OK if this service serves `method` and the caller may call it; else
  // PERMISSION_DENIED or UNAUTHENTICATED. Every handler calls it first.
  absl::Status CheckAccess(const grpc::CallbackServerContext* context,
                           std::string_view method) const;

  // Runs `run` on the executor under `key` (a model's name, or empty), or
  // calls `refuse` with the executor's refusal (overloaded, shutting down)
  // or its cancellation at shutdown. Without an executor, runs it here.
  // `light`: the work is short and of bounded cost (Executor::Task::light).
  void RunCallWork(std::string_view key, std::function<void()> run,
                   std::function<void(const absl::Status&)> refuse, bool light = false);
  // Whether a shutdown began (Executor::draining): long work that can stop
  // between steps stops.
  bool Draining() const { return executor_ != nullptr && executor_->draining(); }

  // A place for one GetModel state_digest, held until the ticket is
  // destroyed; RESOURCE_EXHAUSTED once Limits::max_concurrent_digests run
  // (each holds a copy of its model's coordinates: get_model_digest.h).
  absl::StatusOr<StreamLimit::Ticket> StartDigest() {
    return running_digests_.Open("GetModel state_digest");
  }

  // Admits a new stream of `method` (UpdateStream, UpdateStreamAcked,
  // FeedbackStream): checks access (CheckAccess), then takes a place held
  // until the ticket is destroyed; RESOURCE_EXHAUSTED once
  // Limits::max_open_streams are open (server/stream_limit.h).
  absl::StatusOr<StreamLimit::Ticket> OpenStream(const grpc::CallbackServerContext* context,
                                                 std::string_view method) {
    if (absl::Status s = CheckAccess(context, method); !s.ok()) return s;
    return open_streams_.Open(method);
  }

  // Puts an admitted stream under the idle watch: it is cancelled after
  // Limits::stream_idle_timeout_seconds waiting for its caller's next
  // message (server/stream_idle.h).
  StreamIdleWatch::Registration WatchStream(grpc::CallbackServerContext* context) {
    return idle_streams_.Watch(context);
  }

  // Where an Update or a stream message is learned. `here`: on the gRPC
  // thread that received it, holding the one inline slot, if it yields at most
  // Limits::max_inline_update_features features after interactions, its
  // model is memory-only and learns in this process (a durable model waits
  // for its journal, a replicated one for JetStream), no call on the model
  // that is not light is queued or running, and the slot is free. Else on a
  // worker, as light work if it is that small. The hand-over to a worker
  // and back costs one stream about a tenth of its throughput; at most one
  // gRPC thread is busy this way, so the others keep serving.
  CallPlacement PlaceUpdate(const v1::UpdateRequest& request);

  // Records a finished call of `method` (its name in clickd.v1.Clickd) in
  // the request metrics, if any.
  void RecordRequest(std::string_view method, absl::StatusCode code, double seconds) const;

  // The status a caller of `method` gets for `status`: the data directory
  // is hidden and long messages cut (server/status.h). Internal errors, and
  // any message that named the data directory, are logged whole to stderr.
  grpc::Status ToCallerStatus(std::string_view method, const absl::Status& status) const;

  // Records the end of a stream of `method` begun at `start` and returns the
  // status its caller gets (ToCallerStatus). A stream the client cancelled
  // is recorded as CANCELLED, which is what the client sees.
  grpc::Status EndStream(std::string_view method, const grpc::CallbackServerContext* context,
                         std::chrono::steady_clock::time_point start,
                         const absl::Status& status) const;

 private:
  // Runs a unary call of `method`: checks access, parses the request, then
  // on the executor under key_of(request) (or right here if the
  // CallPlacement run_here(request) says so) checks the deadline, runs
  // work(request, response), or work(request, response, plan) if work
  // takes the placement's CallPlan, records the call and finishes it with work's
  // status and the serialized response.
  template <typename Request, typename Response, typename KeyOf, typename Work,
            typename RunHere = RunOnExecutor>
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* context, std::string_view method,
                                  const Bytes* request_bytes, Bytes* response_bytes, KeyOf key_of,
                                  Work work, RunHere run_here = {});

  // Makes the call of `method`, checks access and parses its request; if
  // either fails, the call is already finished (finished() is true).
  template <typename Request, typename Response>
  std::shared_ptr<UnaryCall<ClickdService, Request, Response>> StartCall(
      grpc::CallbackServerContext* context, std::string_view method, const Bytes* request_bytes,
      Bytes* response_bytes);

  // Runs a started call's work on the executor under `key` (as light work
  // if `light`, Executor::Task::light) and finishes the call; checks the
  // deadline first and turns exceptions into statuses.
  template <typename Call, typename Work>
  void RunCall(std::shared_ptr<Call> call, grpc::CallbackServerContext* context,
               std::string_view method, std::string_view key, bool light, CallPlan plan, Work work);

  // Whether a Predict is scored on the gRPC thread that received it: if
  // it is small (Limits::max_inline_predict_features), or if it is at most
  // Limits::max_quiet_inline_predict_features while the executor is idle
  // and no stream message or other such Predict runs here (holding
  // inline_slot_).
  CallPlacement PlacePredict(const v1::PredictRequest& request);

  ModelRegistry* const registry_;
  LocalModelWriter local_writer_;
  ModelWriter* const writer_;
  const Limits limits_;
  const std::function<void()> on_models_changed_;
  metrics::RpcMetrics* const rpc_metrics_;
  Snapshotter* const snapshotter_;
  Executor* const executor_;
  const auth::AccessControl access_;
  // Held while a large Predict is scored (PlacePredict), or a stream
  // message learned (PlaceUpdate), on a gRPC thread.
  std::atomic<bool> inline_slot_{false};
  // Updates sent to the replicated log and not yet answered: at most the
  // executor's queue bound (--max_queued_calls), as if they still waited.
  std::atomic<size_t> updates_in_flight_{0};
  StreamLimit open_streams_{limits_.max_open_streams};
  StreamLimit running_digests_{limits_.max_concurrent_digests, "state_digests at once",
                               "max_concurrent_digests"};
  StreamIdleWatch idle_streams_{std::chrono::seconds(limits_.stream_idle_timeout_seconds)};
};

}  // namespace clickd

#endif  // CLICKD_SERVER_SERVICE_H_
