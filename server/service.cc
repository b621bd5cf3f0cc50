#include "server/service.h"

#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/model/serving.h"
#include "core/model/state_digest.h"
#include "server/call_util.h"
#include "server/convert.h"
#include "server/get_model_digest.h"
#include "server/request_cost.h"
#include "server/status.h"
#include "server/update_stream.h"

namespace clickd {
using SteadyClock = std::chrono::steady_clock;

ClickdService::ClickdService(ModelRegistry* registry, Limits limits,
                             std::function<void()> on_models_changed,
                             metrics::RpcMetrics* rpc_metrics, Snapshotter* snapshotter,
                             Executor* executor)
    : registry_(registry),
      limits_(limits),
      on_models_changed_(std::move(on_models_changed)),
      rpc_metrics_(rpc_metrics),
      snapshotter_(snapshotter),
      executor_(executor) {}

void ClickdService::RunCallWork(std::string_view key, std::function<void()> run,
                                std::function<void(const absl::Status&)> refuse) {
  if (executor_ == nullptr) {
    run();
    return;
  }
  if (absl::Status s = executor_->Submit(key, {std::move(run), refuse}); !s.ok()) refuse(s);
}

void ClickdService::RecordRequest(std::string_view method, absl::StatusCode code,
                                  double seconds) const {
  if (rpc_metrics_ != nullptr) rpc_metrics_->Record(method, code, seconds);
}

template <typename Work>
grpc::ServerUnaryReactor* ClickdService::Unary(grpc::CallbackServerContext* context,
                                               std::string_view method, Work&& work,
                                               std::string_view key) {
  const SteadyClock::time_point start = SteadyClock::now();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto finish = [this, method, reactor, start](const absl::Status& status) {
    RecordRequest(method, status.code(), SecondsSince(start));
    reactor->Finish(ToGrpcStatus(status));
  };
  RunCallWork(
      key,
      [context, finish, work = std::forward<Work>(work)]() mutable {
        finish(DeadlinePassed(context) ? DeadlinePassedError() : work());
      },
      finish);
  return reactor;
}

absl::StatusOr<std::shared_ptr<ServedModel>> ClickdService::Lookup(const std::string& name,
                                                                   const char* field) const {
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat(field, " is empty"));
  std::shared_ptr<ServedModel> served = registry_->Get(name);
  if (served == nullptr) {
    return absl::NotFoundError(absl::StrCat(field, " \"", name, "\" not found"));
  }
  return served;
}

absl::Status ClickdService::ScorePredictRequest(const v1::PredictRequest& request,
                                                v1::PredictResponse* response) {
  auto served = Lookup(request.model(), "model");
  if (!served.ok()) return served.status();
  const size_t n = request.candidates_size();
  if (n == 0) return absl::InvalidArgumentError("candidates is empty; Predict needs at least one");
  if (n > limits_.max_candidates) {
    return absl::ResourceExhaustedError(
        absl::StrCat("candidates has ", n, " entries; the limit is ", limits_.max_candidates));
  }
  if (absl::Status s = CheckPredictCost((*served)->model().config().hashing, request, limits_);
      !s.ok()) {
    return s;
  }
  auto context = ToExample(request.context(), "context", limits_);
  if (!context.ok()) return context.status();
  std::vector<Example> candidates(n);
  for (size_t i = 0; i < n; ++i) {
    auto c = ToExample(request.candidates(i), absl::StrCat("candidates[", i, "]"), limits_);
    if (!c.ok()) return c.status();
    candidates[i] = *std::move(c);
  }
  const Model& model = (*served)->model();
  for (size_t i = 0; i < n; ++i) {
    absl::Status s = CheckDenseValues(model, &*context, "context", candidates[i],
                                      absl::StrCat("candidates[", i, "]"));
    if (!s.ok()) return s;
  }
  response->set_model_version(model.Updates());
  response->set_request_id(request.request_id());
  for (const CandidateScore& s : ScoreCandidates(model, *context, candidates)) {
    v1::Prediction* p = response->add_predictions();
    p->set_prediction(s.prediction);
    p->set_margin(s.margin);
  }
  (*served)->RecordPredictions(n);
  return absl::OkStatus();
}

absl::Status ClickdService::ApplyUpdate(ServedModel& served, const v1::UpdateRequest& request,
                                        v1::UpdateResponse* response,
                                        std::vector<ScoredExample>* scored) {
  size_t total = request.examples_size();
  for (const v1::Impression& imp : request.impressions()) total += imp.candidates_size();
  if (total == 0) return absl::InvalidArgumentError("examples and impressions are both empty");
  if (total > limits_.max_examples_per_update) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the update has ", total, " examples; the limit is ", limits_.max_examples_per_update));
  }
  if (absl::Status s = CheckUpdateCost(served.model().config().hashing, request, limits_);
      !s.ok()) {
    return s;
  }
  // Convert everything first; the TrainingExamples point into these vectors,
  // which are sized up front so that the pointers stay valid.
  std::vector<Example> examples(total);
  std::vector<Example> contexts(request.impressions_size());
  std::vector<TrainingExample> batch;
  std::vector<std::string> fields;
  batch.reserve(total);
  size_t next = 0;
  for (int i = 0; i < request.examples_size(); ++i, ++next) {
    const v1::LabeledExample& le = request.examples(i);
    fields.push_back(absl::StrCat("examples[", i, "]"));
    auto e = ToExample(le.example(), fields.back() + ".example", limits_);
    if (!e.ok()) return e.status();
    examples[next] = *std::move(e);
    batch.push_back(
        {nullptr, &examples[next], le.label(), le.has_importance() ? le.importance() : 1.0f});
  }
  for (int m = 0; m < request.impressions_size(); ++m) {
    const v1::Impression& imp = request.impressions(m);
    const std::string field = absl::StrCat("impressions[", m, "]");
    auto ctx = ToExample(imp.context(), field + ".context", limits_);
    if (!ctx.ok()) return ctx.status();
    contexts[m] = *std::move(ctx);
    for (int c = 0; c < imp.candidates_size(); ++c, ++next) {
      const v1::LabeledExample& le = imp.candidates(c);
      fields.push_back(absl::StrCat(field, ".candidates[", c, "]"));
      auto e = ToExample(le.example(), fields.back() + ".example", limits_);
      if (!e.ok()) return e.status();
      examples[next] = *std::move(e);
      batch.push_back({&contexts[m], &examples[next], le.label(),
                       le.has_importance() ? le.importance() : 1.0f});
    }
  }
  Model& model = served.model();
  absl::Status valid =
      ValidateTrainingBatch(model.config().loss, batch, [&](size_t i) { return fields[i]; });
  if (!valid.ok()) return valid;
  for (size_t i = 0; i < batch.size(); ++i) {
    const std::string context_field =
        batch[i].context == nullptr
            ? std::string()
            : absl::StrCat("impressions[", batch[i].context - contexts.data(), "].context");
    valid = CheckDenseValues(model, batch[i].context, context_field, *batch[i].example,
                             fields[i] + ".example");
    if (!valid.ok()) return valid;
  }

  absl::StatusOr<std::vector<ScoredExample>> learned = served.Learn(batch);
  if (!learned.ok()) return learned.status();
  response->set_request_id(request.request_id());
  response->set_applied(learned->size());
  response->set_model_version(model.Updates());
  if (request.return_margins()) {
    for (const ScoredExample& s : *learned) response->add_margins(s.margin);
  }
  scored->insert(scored->end(), learned->begin(), learned->end());
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* ClickdService::Predict(grpc::CallbackServerContext* context,
                                                 const v1::PredictRequest* request,
                                                 v1::PredictResponse* response) {
  return Unary(context, "Predict", [=, this] { return ScorePredictRequest(*request, response); });
}

grpc::ServerUnaryReactor* ClickdService::Update(grpc::CallbackServerContext* context,
                                                const v1::UpdateRequest* request,
                                                v1::UpdateResponse* response) {
  return Unary(
      context, "Update",
      [=, this]() -> absl::Status {
        auto served = Lookup(request->model(), "model");
        if (!served.ok()) return served.status();
        std::vector<ScoredExample> scored;
        return ApplyUpdate(**served, *request, response, &scored);
      },
      request->model());
}

grpc::ServerReadReactor<v1::UpdateRequest>* ClickdService::UpdateStream(
    grpc::CallbackServerContext* context, v1::UpdateStreamResponse* response) {
  return NewUpdateStreamReactor(this, context, response);
}

grpc::ServerBidiReactor<v1::UpdateRequest, v1::UpdateAck>* ClickdService::UpdateStreamAcked(
    grpc::CallbackServerContext* context) {
  return NewAckedUpdateStreamReactor(this, context);
}

grpc::ServerUnaryReactor* ClickdService::SnapshotModel(grpc::CallbackServerContext* context,
                                                       const v1::SnapshotModelRequest* request,
                                                       v1::SnapshotModelResponse* response) {
  auto fill = [response](const absl::StatusOr<SnapshotReport>& report) {
    if (!report.ok()) return report.status();
    response->set_sequence(report->sequence);
    response->set_bytes(report->bytes);
    response->set_coordinates(report->coordinates);
    response->set_seconds(report->seconds);
    return absl::OkStatus();
  };
  auto served = Lookup(request->model(), "model");
  if (snapshotter_ == nullptr || !served.ok() || !(*served)->durable() || DeadlinePassed(context)) {
    return Unary(context, "SnapshotModel", [=]() -> absl::Status {
      if (!served.ok()) return served.status();
      return fill((*served)->Snapshot());
    });
  }
  // A snapshot of a large model takes seconds: run it on the snapshotter's
  // low-priority thread and finish the call from there.
  const SteadyClock::time_point start = SteadyClock::now();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  snapshotter_->SnapshotAsync(*std::move(served),
                              [this, reactor, fill, start](absl::StatusOr<SnapshotReport> report) {
                                const absl::Status status = fill(report);
                                RecordRequest("SnapshotModel", status.code(), SecondsSince(start));
                                reactor->Finish(ToGrpcStatus(status));
                              });
  return reactor;
}

grpc::ServerUnaryReactor* ClickdService::CreateModel(grpc::CallbackServerContext* context,
                                                     const v1::CreateModelRequest* request,
                                                     v1::CreateModelResponse* response) {
  return Unary(context, "CreateModel", [=, this]() -> absl::Status {
    auto config = ToModelConfig(request->config());
    if (!config.ok()) return config.status();
    auto served = registry_->Create(*config);
    if (!served.ok()) return served.status();
    on_models_changed_();
    *response->mutable_model() = ToModelInfo(**served);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ClickdService::GetModel(grpc::CallbackServerContext* context,
                                                  const v1::GetModelRequest* request,
                                                  v1::GetModelResponse* response) {
  // The digest reads every coordinate under its shard's lock and may wait
  // for learners: it runs under the model's key, and a deadline that
  // passes meanwhile still fails the call (server/get_model_digest.h).
  if (request->state_digest() && executor_ != nullptr) {
    return GetModelWithDigest(this, context, request, response);
  }
  return Unary(
      context, "GetModel",
      [=, this]() -> absl::Status {
        auto served = Lookup(request->model(), "model");
        if (!served.ok()) return served.status();
        *response->mutable_model() = ToModelInfo(**served);
        if (request->state_digest()) {
          response->mutable_model()->set_state_digest(StateDigest((*served)->model()));
          if (DeadlinePassed(context)) return DeadlinePassedError();
        }
        return absl::OkStatus();
      },
      request->state_digest() ? request->model() : std::string());
}

grpc::ServerUnaryReactor* ClickdService::ListModels(grpc::CallbackServerContext* context,
                                                    const v1::ListModelsRequest* request,
                                                    v1::ListModelsResponse* response) {
  return Unary(context, "ListModels", [=, this]() -> absl::Status {
    for (const auto& served : registry_->List()) {
      *response->add_models() = ToModelInfo(*served);
    }
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ClickdService::DeleteModel(grpc::CallbackServerContext* context,
                                                     const v1::DeleteModelRequest* request,
                                                     v1::DeleteModelResponse* response) {
  // Closing a model's journal waits for its learners: under the model's key.
  return Unary(
      context, "DeleteModel",
      [=, this]() -> absl::Status {
        if (request->model().empty()) return absl::InvalidArgumentError("model is empty");
        absl::Status s = registry_->Delete(request->model());
        if (s.ok()) on_models_changed_();
        return s;
      },
      request->model());
}

}  // namespace clickd
