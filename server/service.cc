#include "server/service.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <string>
#include <type_traits>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/call_deadline.h"
#include "core/base/quote.h"
#include "core/feedback/impressions.h"
#include "core/model/model_config.h"
#include "core/model/serving.h"
#include "core/model/state_digest.h"
#include "core/model/variant_model.h"
#include "server/call_util.h"
#include "server/feedback_request.h"
#include "server/feedback_stream.h"
#include "server/get_model_digest.h"
#include "server/predict_extras.h"
#include "server/predict_scoring.h"
#include "server/request_cost.h"
#include "server/status.h"
#include "server/unary_call.h"
#include "server/update_request.h"
#include "server/update_stream.h"
#include "wire/example_proto.h"
#include "wire/model_config_proto.h"
#include "wire/model_info_proto.h"
#include "wire/predict_request.h"

namespace clickd {
namespace {

// No executor key: the work never waits on one model's locks.
std::string NoKey(const google::protobuf::Message&) { return std::string(); }

// The executor key of work that may wait on the request's model.
template <typename Request>
std::string ModelKey(const Request& request) {
  return request.model();
}

// A unary call's work, run: DEADLINE_EXCEEDED if the deadline passed
// before it started, an exception turned into a status (Guarded). Work
// that takes the call's plan gets it (ClickdService::Unary).
template <typename Call, typename Work>
absl::Status WorkStatus(Call& call, const grpc::CallbackServerContext* context,
                        std::string_view method, Work& work, const CallPlan& plan) {
  auto run = [&] {
    if constexpr (std::is_invocable_v<Work&, decltype(call.request()), decltype(call.response()),
                                      const CallPlan&>) {
      return work(call.request(), call.response(), plan);
    } else {
      return work(call.request(), call.response());
    }
  };
  return DeadlinePassed(context) ? DeadlinePassedError() : Guarded(method, run);
}

// Fills the response of a learned update and appends its pre-update scores.
void FillUpdateResponse(const v1::UpdateRequest& request, size_t applied,
                        const ModelWriter::Learned& learned, v1::UpdateResponse* response,
                        std::vector<ScoredExample>* scored) {
  response->set_request_id(request.request_id());
  response->set_applied(learned.duplicate ? 0 : applied);
  response->set_model_version(learned.version);
  response->set_duplicate(learned.duplicate);
  if (request.return_margins()) {
    for (const ScoredExample& s : learned.scored) response->add_margins(s.margin);
  }
  scored->insert(scored->end(), learned.scored.begin(), learned.scored.end());
}

}  // namespace

ClickdService::ClickdService(ClickdServiceOptions options)
    : registry_(options.registry),
      local_writer_(options.registry),
      writer_(options.writer != nullptr ? options.writer : &local_writer_),
      limits_(options.limits),
      on_models_changed_(std::move(options.on_models_changed)),
      rpc_metrics_(options.rpc_metrics),
      snapshotter_(options.snapshotter),
      executor_(options.executor),
      access_(options.access) {}

absl::Status ClickdService::CheckAccess(const grpc::CallbackServerContext* context,
                                        std::string_view method) const {
  return auth::CheckCall(access_, *context, method);
}

void ClickdService::RunCallWork(std::string_view key, std::function<void()> run,
                                std::function<void(const absl::Status&)> refuse, bool light) {
  if (executor_ == nullptr) {
    run();
    return;
  }
  if (absl::Status s = executor_->Submit(key, {std::move(run), refuse, light}); !s.ok()) refuse(s);
}

CallPlacement ClickdService::PlaceUpdate(const v1::UpdateRequest& request) {
  const uint64_t bound = limits_.max_inline_update_features;
  if (executor_ == nullptr || bound == 0) return {};
  CallPlan plan;
  plan.served = registry_->Get(request.model());
  if (plan.served == nullptr) return {};  // NotFound, on a worker
  plan.cost = CountUpdateCost(plan.served->model().config().hashing, request, limits_);
  if (!plan.cost->status.ok() || plan.cost->features > bound) {
    return {InlineLease(), /*light=*/false, std::move(plan)};
  }
  const bool here = writer_ == &local_writer_ && !plan.served->durable() &&
                    // Checked before the slot, so the slot is never taken
                    // only to be given back. A long call on this model that
                    // starts in between can still make this message wait for
                    // it: that is rare, and bounded by the limits.
                    executor_->KeyIsLight(request.model());
  return {here ? InlineLease::TryAcquire(&inline_slot_) : InlineLease(), /*light=*/true,
          std::move(plan)};
}

void ClickdService::RecordRequest(std::string_view method, absl::StatusCode code,
                                  double seconds) const {
  if (rpc_metrics_ != nullptr) rpc_metrics_->Record(method, code, seconds);
}

grpc::Status ClickdService::ToCallerStatus(std::string_view method,
                                           const absl::Status& status) const {
  const std::string& data_dir = registry_->data_dir();
  const bool names_data_dir = !data_dir.empty() && absl::StrContains(status.message(), data_dir);
  if (names_data_dir || status.code() == absl::StatusCode::kInternal ||
      status.code() == absl::StatusCode::kDataLoss) {
    std::cerr << "clickd: " << method << ": " << absl::StatusCodeToString(status.code()) << ": "
              << status.message() << std::endl;
  }
  return ToGrpcStatus(status, data_dir);
}

grpc::Status ClickdService::EndStream(std::string_view method,
                                      const grpc::CallbackServerContext* context,
                                      std::chrono::steady_clock::time_point start,
                                      const absl::Status& status) const {
  const absl::StatusCode code =
      status.ok() && context->IsCancelled() ? absl::StatusCode::kCancelled : status.code();
  RecordRequest(method, code, SecondsSince(start));
  return ToCallerStatus(method, status);
}

template <typename Request, typename Response>
std::shared_ptr<UnaryCall<ClickdService, Request, Response>> ClickdService::StartCall(
    grpc::CallbackServerContext* context, std::string_view method, const Bytes* request_bytes,
    Bytes* response_bytes) {
  auto call = std::make_shared<UnaryCall<ClickdService, Request, Response>>(this, context, method,
                                                                            response_bytes);
  absl::Status status = CheckAccess(context, method);
  if (status.ok()) status = ParseRequest(*request_bytes, &call->request());
  if (!status.ok()) call->Finish(status);
  return call;
}

template <typename Call, typename Work>
void ClickdService::RunCall(std::shared_ptr<Call> call, grpc::CallbackServerContext* context,
                            std::string_view method, std::string_view key, bool light,
                            CallPlan plan, Work work) {
  auto run_call = [call, context, method, plan = std::move(plan),
                   work = std::move(work)]() mutable {
    call->Finish(WorkStatus(*call, context, method, work, plan));
  };
  RunCallWork(
      key, std::move(run_call), [call](const absl::Status& refused) { call->Finish(refused); },
      light);
}

template <typename Request, typename Response, typename KeyOf, typename Work, typename RunHere>
grpc::ServerUnaryReactor* ClickdService::Unary(grpc::CallbackServerContext* context,
                                               std::string_view method, const Bytes* request_bytes,
                                               Bytes* response_bytes, KeyOf key_of, Work work,
                                               RunHere run_here) {
  auto call = StartCall<Request, Response>(context, method, request_bytes, response_bytes);
  if (call->finished()) return call->reactor();
  std::optional<absl::Status> status_here;
  {
    // Held while the work runs here: it may hold a slot (server/inline_lease.h),
    // given back before the call is answered, so that the caller's next call
    // can take it.
    CallPlacement placed = run_here(call->request());
    if (placed) {
      status_here = WorkStatus(*call, context, method, work, placed.plan);
    } else {
      RunCall(call, context, method, key_of(call->request()), placed.light, std::move(placed.plan),
              std::move(work));
    }
  }
  if (status_here.has_value()) call->Finish(*status_here);
  return call->reactor();
}

absl::StatusOr<std::shared_ptr<ServedModel>> ClickdService::Lookup(const std::string& name,
                                                                   const char* field) const {
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat(field, " is empty"));
  std::shared_ptr<ServedModel> served = registry_->Get(name);
  if (served == nullptr) {
    return absl::NotFoundError(absl::StrCat(field, " ", Quote(name), " not found"));
  }
  return served;
}

absl::Status ClickdService::ScorePredictRequest(const v1::PredictRequest& request,
                                                v1::PredictResponse* response,
                                                const CallPlan& plan) {
  auto served = plan.served != nullptr ? plan.served : Lookup(request.model(), "model");
  if (!served.ok()) return served.status();
  // Kept per thread so that its buffers are reused; a large request's are
  // not kept for the thread's next one.
  thread_local HashedCandidates hashed;
  absl::Cleanup release = [] { ReleaseLargeHashBuffers(&hashed); };
  ScoringModel scorer;
  if (absl::Status s = PlanPredict(**served, request, limits_, plan.counted(), &hashed, &scorer);
      !s.ok()) {
    return s;
  }
  if (request.min_model_version() > 0) {
    if (absl::Status s = writer_->AwaitVersion(**served, request.min_model_version()); !s.ok()) {
      return s;
    }
  }
  const uint64_t version = writer_->Version(**served);
  const std::vector<CandidateScore> scores = ScoreCandidates(*scorer.model, hashed);
  uint64_t first_impression = 0;
  if (request.log_impressions()) {
    absl::StatusOr<uint64_t> first = LogImpressions(**served, hashed, scores);
    if (!first.ok()) return first.status();
    first_impression = *first;
  }
  AnswerPredict(**served, scorer, request, hashed, scores, version, first_impression, response);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ClickdService::LogImpressions(ServedModel& served,
                                                       const HashedCandidates& hashed,
                                                       absl::Span<const CandidateScore> scores) {
  // The budget bounds what is built: a request that could not fit even an
  // empty buffer is refused before its impressions are copied.
  const uint64_t budget = served.feedback()->config().max_buffer_bytes;
  if (const uint64_t bound = ImpressionBytesBound(served.model(), hashed); bound > budget) {
    served.RecordRefusedImpressions(scores.size());
    return absl::ResourceExhaustedError(
        absl::StrCat("log_impressions: the candidates' impressions take up to ", bound,
                     " bytes; the model's feedback.max_buffer_bytes is ", budget));
  }
  PredictImpressions impressions;
  BuildImpressions(served.model(), hashed, scores, &impressions);
  return writer_->LogImpressions(served, impressions.views);
}

absl::Status ClickdService::ApplyFeedback(const v1::FeedbackRequest& request,
                                          v1::FeedbackResponse* response) {
  auto served = Lookup(request.model(), "model");
  if (!served.ok()) return served.status();
  // Before the items are checked: no item is right for such a model.
  if ((*served)->feedback() == nullptr) return NoFeedbackLoopError(request.model());
  if (absl::Status s = CheckIdempotencyKey(request.idempotency_key(), limits_); !s.ok()) return s;
  absl::StatusOr<std::vector<FeedbackItem>> items =
      ValidateFeedbackRequest(request, limits_, WallNowMicros());
  if (!items.ok()) return items.status();
  absl::StatusOr<ModelWriter::Joined> applied =
      writer_->ApplyFeedback(**served, *items, request.idempotency_key());
  if (!applied.ok()) return applied.status();
  response->set_request_id(request.request_id());
  response->set_duplicate(applied->duplicate);
  uint64_t joined = 0;
  for (JoinOutcome outcome : applied->outcomes) {
    response->add_statuses(ToFeedbackStatus(outcome));
    joined += outcome == JoinOutcome::kJoined ? 1 : 0;
  }
  response->set_joined(joined);
  response->set_model_version(applied->version);
  return absl::OkStatus();
}

absl::Status ClickdService::ApplyUpdate(ServedModel& served, const v1::UpdateRequest& request,
                                        v1::UpdateResponse* response,
                                        std::vector<ScoredExample>* scored,
                                        const RequestCost* counted) {
  absl::StatusOr<ValidatedUpdate> update =
      ValidateUpdateRequest(served.model(), request, limits_, counted);
  if (!update.ok()) return update.status();
  absl::StatusOr<ModelWriter::Learned> learned =
      writer_->Learn(served, update->batch, request.idempotency_key());
  if (!learned.ok()) return learned.status();
  FillUpdateResponse(request, update->batch.size(), *learned, response, scored);
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* ClickdService::Predict(grpc::CallbackServerContext* context,
                                                 const Bytes* request, Bytes* response) {
  return Unary<v1::PredictRequest, v1::PredictResponse>(
      context, "Predict", request, response, NoKey,
      [this, context](const v1::PredictRequest& req, v1::PredictResponse* resp,
                      const CallPlan& plan) -> absl::Status {
        // Logging impressions changes the model (the join buffer, and the
        // fake-negative policies learn at once): it takes Feedback's role.
        if (req.log_impressions()) {
          if (absl::Status s = CheckAccess(context, "Feedback"); !s.ok()) {
            return absl::Status(s.code(), absl::StrCat("log_impressions: ", s.message()));
          }
        }
        return ScorePredictRequest(req, resp, plan);
      },
      [this](const v1::PredictRequest& req) { return PlacePredict(req); });
}

CallPlacement ClickdService::PlacePredict(const v1::PredictRequest& request) {
  if (executor_ == nullptr) return {};
  // Logging impressions writes the update log: never on a gRPC thread.
  if (request.log_impressions()) return {};
  const uint64_t small = limits_.max_inline_predict_features;
  CallPlan plan;
  plan.served = registry_->Get(request.model());
  if (plan.served == nullptr) {  // NotFound, answered at once
    return {small > 0 ? InlineLease::Here() : InlineLease()};
  }
  // A replica behind min_model_version waits for it: never on a gRPC thread.
  if (request.min_model_version() > 0 &&
      request.min_model_version() > writer_->Version(*plan.served)) {
    return {InlineLease(), /*light=*/false, std::move(plan)};
  }
  // The request's cost, counted once for both the limits and the inline
  // bounds (server/request_cost.h; a single example's count is never more
  // than the total). A request over a limit is refused here at once.
  plan.cost = CountPredictCost(plan.served->model().config().hashing, request, limits_);
  const uint64_t total = plan.cost->features;
  if (!plan.cost->status.ok() || (small > 0 && total <= small)) {
    return {InlineLease::Here(), /*light=*/false, std::move(plan)};
  }
  // A larger one only while the workers would be idle anyway, and one at a
  // time (InlineLease).
  const uint64_t quiet = limits_.max_quiet_inline_predict_features;
  const bool may_run_here = quiet > 0 && total <= quiet && executor_->idle();
  return {may_run_here ? InlineLease::TryAcquire(&inline_slot_) : InlineLease(), /*light=*/false,
          std::move(plan)};
}

grpc::ServerUnaryReactor* ClickdService::Update(grpc::CallbackServerContext* context,
                                                const Bytes* request, Bytes* response) {
  if (writer_->LearnsAsynchronously()) return UpdateWithoutWaiting(context, request, response);
  return Unary<v1::UpdateRequest, v1::UpdateResponse>(
      context, "Update", request, response, ModelKey<v1::UpdateRequest>,
      [this, context](const v1::UpdateRequest& req, v1::UpdateResponse* resp,
                      const CallPlan& plan) -> absl::Status {
        auto served = plan.served != nullptr ? plan.served : Lookup(req.model(), "model");
        if (!served.ok()) return served.status();
        std::vector<ScoredExample> scored;
        // Refused whole if it waits past its deadline for the model's
        // learners (core/base/call_deadline.h).
        CallDeadline deadline(context->deadline());
        return ApplyUpdate(**served, req, resp, &scored, plan.counted());
      },
      [this](const v1::UpdateRequest& req) { return PlaceUpdate(req); });
}

grpc::ServerUnaryReactor* ClickdService::UpdateWithoutWaiting(grpc::CallbackServerContext* context,
                                                              const Bytes* request,
                                                              Bytes* response) {
  std::shared_ptr<UpdateCall> call =
      StartCall<v1::UpdateRequest, v1::UpdateResponse>(context, "Update", request, response);
  if (call->finished()) return call->reactor();
  CallPlacement placed = SendsInline(call->request());
  auto run = [this, call, context, plan = std::move(placed.plan)] {
    if (DeadlinePassed(context)) {
      call->Finish(DeadlinePassedError());
      return;
    }
    auto start = [&] { return StartUpdate(call, plan); };
    if (absl::Status s = Guarded("Update", start); !s.ok()) call->Finish(s);
  };
  // Only checking and encoding run here, not learning: a small message is
  // sent from the gRPC thread that received it (saving the hand-over to a
  // worker), one at a time like the other inline work.
  if (placed) {
    run();
    return call->reactor();
  }
  RunCallWork(
      call->request().model(), std::move(run),
      [call](const absl::Status& refused) { call->Finish(refused); }, /*light=*/true);
  return call->reactor();
}

CallPlacement ClickdService::SendsInline(const v1::UpdateRequest& request) {
  const uint64_t bound = limits_.max_inline_update_features;
  if (executor_ == nullptr || bound == 0) return {};
  CallPlan plan;
  plan.served = registry_->Get(request.model());
  if (plan.served == nullptr) return {};  // NotFound, on a worker
  plan.cost = CountUpdateCost(plan.served->model().config().hashing, request, limits_);
  const bool small = plan.cost->status.ok() && plan.cost->features <= bound;
  return {small ? InlineLease::TryAcquire(&inline_slot_) : InlineLease(), /*light=*/true,
          std::move(plan)};
}

absl::Status ClickdService::StartUpdate(const std::shared_ptr<UpdateCall>& call,
                                        const CallPlan& plan) {
  const v1::UpdateRequest& request = call->request();
  auto served = plan.served != nullptr ? plan.served : Lookup(request.model(), "model");
  if (!served.ok()) return served.status();
  absl::StatusOr<ValidatedUpdate> update =
      ValidateUpdateRequest((*served)->model(), request, limits_, plan.counted());
  if (!update.ok()) return update.status();
  const size_t limit = executor_ != nullptr ? executor_->options().max_queued : 1024;
  if (const size_t n = updates_in_flight_.fetch_add(1) + 1; n > limit) {
    updates_in_flight_.fetch_sub(1);
    return absl::ResourceExhaustedError(absl::StrCat(
        "server overloaded: ", n - 1, " updates wait for the replicated log; the limit is ", limit,
        " (--max_queued_calls)"));
  }
  const size_t examples = update->batch.size();
  absl::Status sent = writer_->LearnAsync(
      **served, update->batch, request.idempotency_key(),
      [this, call, examples](absl::StatusOr<ModelWriter::Learned> learned) {
        updates_in_flight_.fetch_sub(1);
        if (!learned.ok()) {
          call->Finish(learned.status());
          return;
        }
        call->Finish(absl::OkStatus(), [&] {
          std::vector<ScoredExample> scored;
          FillUpdateResponse(call->request(), examples, *learned, call->response(), &scored);
        });
      });
  if (!sent.ok()) updates_in_flight_.fetch_sub(1);
  return sent;
}

grpc::ServerUnaryReactor* ClickdService::Feedback(grpc::CallbackServerContext* context,
                                                  const Bytes* request, Bytes* response) {
  return Unary<v1::FeedbackRequest, v1::FeedbackResponse>(
      context, "Feedback", request, response, ModelKey<v1::FeedbackRequest>,
      [this](const v1::FeedbackRequest& req, v1::FeedbackResponse* resp) {
        return ApplyFeedback(req, resp);
      });
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ClickdService::FeedbackStream(
    grpc::CallbackServerContext* context) {
  return NewFeedbackStreamReactor(this, context);
}

grpc::ServerReadReactor<grpc::ByteBuffer>* ClickdService::UpdateStream(
    grpc::CallbackServerContext* context, Bytes* response) {
  return NewUpdateStreamReactor(this, context, response);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ClickdService::UpdateStreamAcked(
    grpc::CallbackServerContext* context) {
  return NewAckedUpdateStreamReactor(this, context);
}

grpc::ServerUnaryReactor* ClickdService::SnapshotModel(grpc::CallbackServerContext* context,
                                                       const Bytes* request_bytes,
                                                       Bytes* response_bytes) {
  auto call = StartCall<v1::SnapshotModelRequest, v1::SnapshotModelResponse>(
      context, "SnapshotModel", request_bytes, response_bytes);
  if (call->finished()) return call->reactor();  // refused or unparsable
  auto finish = [call](const absl::StatusOr<SnapshotReport>& report) {
    if (!report.ok()) return call->Finish(report.status());
    return call->Finish(absl::OkStatus(), [&] {
      v1::SnapshotModelResponse* response = call->response();
      response->set_sequence(report->sequence);
      response->set_bytes(report->bytes);
      response->set_coordinates(report->coordinates);
      response->set_seconds(report->seconds);
    });
  };
  auto served = Lookup(call->request().model(), "model");
  if (!served.ok()) {
    call->Finish(served.status());
  } else if (DeadlinePassed(context)) {
    call->Finish(DeadlinePassedError());
  } else if (writer_->SnapshotsAllModels()) {
    // Every model at one sequence (a replica): on the executor.
    RunCallWork(
        /*key=*/"", [this, finish] { finish(writer_->SnapshotAll()); },
        [call](const absl::Status& refused) { call->Finish(refused); });
  } else if (snapshotter_ == nullptr || !(*served)->durable()) {
    // A memory-only model answers FailedPrecondition at once.
    finish((*served)->Snapshot());
  } else {
    // A snapshot of a large model takes seconds: run it on the
    // snapshotter's thread (its encoding and write at low priority) and
    // finish the call from there.
    snapshotter_->SnapshotAsync(
        *std::move(served), [finish](absl::StatusOr<SnapshotReport> report) { finish(report); });
  }
  return call->reactor();
}

grpc::ServerUnaryReactor* ClickdService::CreateModel(grpc::CallbackServerContext* context,
                                                     const Bytes* request, Bytes* response) {
  return Unary<v1::CreateModelRequest, v1::CreateModelResponse>(
      context, "CreateModel", request, response, NoKey,
      [this](const v1::CreateModelRequest& req, v1::CreateModelResponse* resp) -> absl::Status {
        auto config = ToModelConfig(req.config());
        if (!config.ok()) return config.status();
        // This incarnation's impression ids, the same on every replica
        // (the create record carries the config).
        if (config->feedback.enabled()) config->feedback.id_tag = NewImpressionIdTag();
        if (absl::Status s = CheckModelFixedBytes(*config, limits_); !s.ok()) return s;
        auto served = writer_->Create(*config);
        if (!served.ok()) return served.status();
        if (on_models_changed_) on_models_changed_();
        *resp->mutable_model() = Describe(**served);
        return absl::OkStatus();
      });
}

v1::ModelInfo ClickdService::Describe(const ServedModel& served) const {
  v1::ModelInfo info = ToModelInfo(served);
  if (std::optional<ReplicaStatus> status = writer_->Replication(); status.has_value()) {
    v1::ReplicationInfo* out = info.mutable_replication();
    out->set_applied_sequence(status->applied_sequence);
    out->set_broken(!status->broken.ok());
    out->set_diverged(status->divergence.diverged);
    out->set_reason(!status->broken.ok() ? std::string(status->broken.message())
                                         : status->divergence.reason);
    out->set_peers_agreeing(status->divergence.peers_agreeing);
    out->set_peers_disagreeing(status->divergence.peers_disagreeing);
  }
  return info;
}

grpc::ServerUnaryReactor* ClickdService::GetModel(grpc::CallbackServerContext* context,
                                                  const Bytes* request_bytes,
                                                  Bytes* response_bytes) {
  auto call = StartCall<v1::GetModelRequest, v1::GetModelResponse>(context, "GetModel",
                                                                   request_bytes, response_bytes);
  if (call->finished()) return call->reactor();  // refused or unparsable
  // The digest reads every coordinate under its shard's lock and may wait
  // for learners: it runs under the model's key, and a deadline that
  // passes meanwhile still fails the call (server/get_model_digest.h).
  if (call->request().state_digest()) {
    if (absl::Status s = CheckAccess(context, "GetModel(state_digest)"); !s.ok()) {
      call->Finish(s);
      return call->reactor();
    }
    GetModelWithDigest(this, context, call);
    return call->reactor();
  }
  RunCall(call, context, "GetModel", /*key=*/"", /*light=*/false, CallPlan(),
          [this](const v1::GetModelRequest& req, v1::GetModelResponse* resp) -> absl::Status {
            auto served = Lookup(req.model(), "model");
            if (!served.ok()) return served.status();
            *resp->mutable_model() = Describe(**served);
            return absl::OkStatus();
          });
  return call->reactor();
}

grpc::ServerUnaryReactor* ClickdService::ListModels(grpc::CallbackServerContext* context,
                                                    const Bytes* request, Bytes* response) {
  return Unary<v1::ListModelsRequest, v1::ListModelsResponse>(
      context, "ListModels", request, response, NoKey,
      [this](const v1::ListModelsRequest&, v1::ListModelsResponse* resp) {
        for (const auto& served : registry_->List()) *resp->add_models() = Describe(*served);
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* ClickdService::DeleteModel(grpc::CallbackServerContext* context,
                                                     const Bytes* request, Bytes* response) {
  // Closing a model's journal waits for its learners: under the model's key.
  return Unary<v1::DeleteModelRequest, v1::DeleteModelResponse>(
      context, "DeleteModel", request, response, ModelKey<v1::DeleteModelRequest>,
      [this](const v1::DeleteModelRequest& req, v1::DeleteModelResponse*) -> absl::Status {
        if (req.model().empty()) return absl::InvalidArgumentError("model is empty");
        absl::Status s = writer_->Delete(req.model());
        if (s.ok() && on_models_changed_) on_models_changed_();
        return s;
      });
}

}  // namespace clickd
