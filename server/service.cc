#include "server/service.h"

#include <chrono>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/model/serving.h"
#include "server/convert.h"
#include "server/status.h"

namespace clickd {
namespace {

bool DeadlinePassed(const grpc::CallbackServerContext* context) {
  return context->deadline() < std::chrono::system_clock::now();
}

const absl::Status kDeadlinePassed =
    absl::DeadlineExceededError("the call's deadline passed before it was served");

using SteadyClock = std::chrono::steady_clock;

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

// Learns the messages of one client stream; answers with a summary when the
// client closes it. A rejected message ends the stream with its error; the
// messages before it stay applied (each message is all or nothing).
class UpdateStreamReactor final : public grpc::ServerReadReactor<v1::UpdateRequest> {
 public:
  UpdateStreamReactor(ClickdService* service, grpc::CallbackServerContext* context,
                      v1::UpdateStreamResponse* response)
      : service_(service), context_(context), response_(response), start_(SteadyClock::now()) {
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client closed the stream
      FinishWithSummary();
      return;
    }
    absl::Status status = HandleMessage();
    if (!status.ok()) {
      FinishAndRecord(absl::Status(
          status.code(), absl::StrCat("message ", requests_, " (", applied_,
                                      " examples applied before it): ", status.message())));
      return;
    }
    ++requests_;
    StartRead(&request_);
  }

  void OnDone() override { delete this; }

 private:
  absl::Status HandleMessage() {
    if (DeadlinePassed(context_)) return kDeadlinePassed;
    if (served_ == nullptr) {
      auto served = service_->Lookup(request_.model(), "model");
      if (!served.ok()) return served.status();
      served_ = *std::move(served);
      metrics_.emplace(served_->model().config().loss);
    } else if (request_.model() != served_->model().config().name) {
      return absl::InvalidArgumentError(absl::StrCat("model is \"", request_.model(),
                                                     "\"; every message of a stream must name \"",
                                                     served_->model().config().name, "\""));
    } else if (service_->Lookup(request_.model(), "model").value_or(nullptr) != served_) {
      // Learning into a deleted (or deleted and re-created) model would
      // acknowledge examples that no served model holds.
      return absl::NotFoundError(absl::StrCat("model \"", request_.model(),
                                              "\" was deleted or replaced during the stream"));
    }
    v1::UpdateResponse unused;
    scored_.clear();
    absl::Status status = service_->ApplyUpdate(*served_, request_, &unused, &scored_);
    if (!status.ok()) return status;
    for (const ScoredExample& s : scored_) metrics_->Add(s.margin, s.label, s.importance);
    applied_ += scored_.size();
    return absl::OkStatus();
  }

  void FinishWithSummary() {
    response_->set_requests(requests_);
    response_->set_applied(applied_);
    if (served_ != nullptr) {
      response_->set_model_version(served_->model().Updates());
      *response_->mutable_metrics() = ToProto(metrics_->Summary());
    }
    FinishAndRecord(absl::OkStatus());
  }

  // Finishes the call and records it; a stream the client cancelled counts
  // as CANCELLED, which is what the client sees.
  void FinishAndRecord(const absl::Status& status) {
    const absl::StatusCode code =
        status.ok() && context_->IsCancelled() ? absl::StatusCode::kCancelled : status.code();
    service_->RecordRequest("UpdateStream", code, SecondsSince(start_));
    Finish(ToGrpcStatus(status));
  }

  ClickdService* const service_;
  grpc::CallbackServerContext* const context_;
  v1::UpdateStreamResponse* const response_;
  const SteadyClock::time_point start_;
  v1::UpdateRequest request_;
  std::shared_ptr<ServedModel> served_;
  std::optional<ProgressiveMetrics> metrics_;  // exact, over this stream
  std::vector<ScoredExample> scored_;
  uint64_t requests_ = 0;
  uint64_t applied_ = 0;
};

}  // namespace

ClickdService::ClickdService(ModelRegistry* registry, Limits limits,
                             std::function<void()> on_models_changed,
                             metrics::RpcMetrics* rpc_metrics)
    : registry_(registry),
      limits_(limits),
      on_models_changed_(std::move(on_models_changed)),
      rpc_metrics_(rpc_metrics) {}

void ClickdService::RecordRequest(std::string_view method, absl::StatusCode code,
                                  double seconds) const {
  if (rpc_metrics_ != nullptr) rpc_metrics_->Record(method, code, seconds);
}

template <typename Work>
grpc::ServerUnaryReactor* ClickdService::Unary(grpc::CallbackServerContext* context,
                                               std::string_view method, Work&& work) {
  const SteadyClock::time_point start = SteadyClock::now();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const absl::Status status = DeadlinePassed(context) ? kDeadlinePassed : work();
  RecordRequest(method, status.code(), SecondsSince(start));
  reactor->Finish(ToGrpcStatus(status));
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
  auto context = ToExample(request.context(), "context", limits_);
  if (!context.ok()) return context.status();
  std::vector<Example> candidates(n);
  for (size_t i = 0; i < n; ++i) {
    auto c = ToExample(request.candidates(i), absl::StrCat("candidates[", i, "]"), limits_);
    if (!c.ok()) return c.status();
    candidates[i] = *std::move(c);
  }
  const Model& model = (*served)->model();
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

  std::vector<ScoredExample> learned = LearnBatch(model, batch);
  served.RecordProgressive(learned);
  response->set_request_id(request.request_id());
  response->set_applied(learned.size());
  response->set_model_version(model.Updates());
  if (request.return_margins()) {
    for (const ScoredExample& s : learned) response->add_margins(s.margin);
  }
  scored->insert(scored->end(), learned.begin(), learned.end());
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* ClickdService::Predict(grpc::CallbackServerContext* context,
                                                 const v1::PredictRequest* request,
                                                 v1::PredictResponse* response) {
  return Unary(context, "Predict", [&] { return ScorePredictRequest(*request, response); });
}

grpc::ServerUnaryReactor* ClickdService::Update(grpc::CallbackServerContext* context,
                                                const v1::UpdateRequest* request,
                                                v1::UpdateResponse* response) {
  return Unary(context, "Update", [&]() -> absl::Status {
    auto served = Lookup(request->model(), "model");
    if (!served.ok()) return served.status();
    std::vector<ScoredExample> scored;
    return ApplyUpdate(**served, *request, response, &scored);
  });
}

grpc::ServerReadReactor<v1::UpdateRequest>* ClickdService::UpdateStream(
    grpc::CallbackServerContext* context, v1::UpdateStreamResponse* response) {
  return new UpdateStreamReactor(this, context, response);
}

grpc::ServerUnaryReactor* ClickdService::CreateModel(grpc::CallbackServerContext* context,
                                                     const v1::CreateModelRequest* request,
                                                     v1::CreateModelResponse* response) {
  return Unary(context, "CreateModel", [&]() -> absl::Status {
    auto config = ToModelConfig(request->config());
    if (!config.ok()) return config.status();
    auto served = registry_->Create(*config);
    if (!served.ok()) return served.status();
    on_models_changed_();
    *response->mutable_model() = ToModelInfo((*served)->model(), (*served)->ProgressiveSummary());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ClickdService::GetModel(grpc::CallbackServerContext* context,
                                                  const v1::GetModelRequest* request,
                                                  v1::GetModelResponse* response) {
  return Unary(context, "GetModel", [&]() -> absl::Status {
    auto served = Lookup(request->model(), "model");
    if (!served.ok()) return served.status();
    *response->mutable_model() = ToModelInfo((*served)->model(), (*served)->ProgressiveSummary());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ClickdService::ListModels(grpc::CallbackServerContext* context,
                                                    const v1::ListModelsRequest* request,
                                                    v1::ListModelsResponse* response) {
  return Unary(context, "ListModels", [&]() -> absl::Status {
    for (const auto& served : registry_->List()) {
      *response->add_models() = ToModelInfo(served->model(), served->ProgressiveSummary());
    }
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ClickdService::DeleteModel(grpc::CallbackServerContext* context,
                                                     const v1::DeleteModelRequest* request,
                                                     v1::DeleteModelResponse* response) {
  return Unary(context, "DeleteModel", [&]() -> absl::Status {
    if (request->model().empty()) return absl::InvalidArgumentError("model is empty");
    absl::Status s = registry_->Delete(request->model());
    if (s.ok()) on_models_changed_();
    return s;
  });
}

}  // namespace clickd
