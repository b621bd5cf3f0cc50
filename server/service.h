// ClickdService: the clickd.v1.Clickd gRPC service on the callback API.
//
// Thin by design: each handler converts the request (server/convert.h),
// calls core (core/model/serving.h, core/model/registry.h) and converts the
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
// waits (server/get_model_digest.h). SnapshotModel runs on the snapshotter's own thread. Without an
// executor (unit tests), work runs on the calling thread.
//
// Every finished call, failures included, is recorded in the request
// metrics (server/metrics/rpc_metrics.h) when the service has them.
//
// Thread safety: safe for concurrent calls; all shared state is in the
// registry, the models and the metrics, which synchronize themselves.
#ifndef CLICKD_SERVER_SERVICE_H_
#define CLICKD_SERVER_SERVICE_H_

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "clickd/v1/clickd.grpc.pb.h"
#include "core/model/registry.h"
#include "server/executor.h"
#include "server/limits.h"
#include "server/metrics/rpc_metrics.h"
#include "server/snapshotter.h"

namespace clickd {

class ClickdService final : public v1::Clickd::CallbackService {
 public:
  // `on_models_changed` runs after every successful create or delete (the
  // server uses it to keep the health status current). `rpc_metrics`, if
  // not null, must outlive the service. `snapshotter`, if not null, runs
  // SnapshotModel off the gRPC threads (without it, on the calling thread).
  // `executor`, if not null, runs every call's work (without it, on the
  // calling thread); it must outlive the calls.
  ClickdService(ModelRegistry* registry, Limits limits, std::function<void()> on_models_changed,
                metrics::RpcMetrics* rpc_metrics = nullptr, Snapshotter* snapshotter = nullptr,
                Executor* executor = nullptr);

  grpc::ServerUnaryReactor* Predict(grpc::CallbackServerContext* context,
                                    const v1::PredictRequest* request,
                                    v1::PredictResponse* response) override;
  grpc::ServerUnaryReactor* Update(grpc::CallbackServerContext* context,
                                   const v1::UpdateRequest* request,
                                   v1::UpdateResponse* response) override;
  grpc::ServerReadReactor<v1::UpdateRequest>* UpdateStream(
      grpc::CallbackServerContext* context, v1::UpdateStreamResponse* response) override;
  grpc::ServerBidiReactor<v1::UpdateRequest, v1::UpdateAck>* UpdateStreamAcked(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* SnapshotModel(grpc::CallbackServerContext* context,
                                          const v1::SnapshotModelRequest* request,
                                          v1::SnapshotModelResponse* response) override;
  grpc::ServerUnaryReactor* CreateModel(grpc::CallbackServerContext* context,
                                        const v1::CreateModelRequest* request,
                                        v1::CreateModelResponse* response) override;
  grpc::ServerUnaryReactor* GetModel(grpc::CallbackServerContext* context,
                                     const v1::GetModelRequest* request,
                                     v1::GetModelResponse* response) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context,
                                       const v1::ListModelsRequest* request,
                                       v1::ListModelsResponse* response) override;
  grpc::ServerUnaryReactor* DeleteModel(grpc::CallbackServerContext* context,
                                        const v1::DeleteModelRequest* request,
                                        v1::DeleteModelResponse* response) override;

  // Validates and learns one UpdateRequest (a unary call or one stream
  // message) on `served`; all or nothing. Appends the pre-update scores.
  absl::Status ApplyUpdate(ServedModel& served, const v1::UpdateRequest& request,
                           v1::UpdateResponse* response, std::vector<ScoredExample>* scored);

  // Validates and scores one PredictRequest.
  absl::Status ScorePredictRequest(const v1::PredictRequest& request,
                                   v1::PredictResponse* response);

  // The named model, or NotFound / InvalidArgument naming `field`.
  absl::StatusOr<std::shared_ptr<ServedModel>> Lookup(const std::string& name,
                                                      const char* field) const;

  // Runs `run` on the executor under `key` (a model's name, or empty), or
  // calls `refuse` with the executor's refusal (overloaded, shutting down)
  // or its cancellation at shutdown. Without an executor, runs it here.
  void RunCallWork(std::string_view key, std::function<void()> run,
                   std::function<void(const absl::Status&)> refuse);

  // Records a finished call of `method` (its name in clickd.v1.Clickd) in
  // the request metrics, if any.
  void RecordRequest(std::string_view method, absl::StatusCode code, double seconds) const;

 private:
  // Runs a unary call of `method` on the executor under `key`: checks the
  // deadline, runs `work`, records the call and finishes it with work's
  // status. `work` runs after the handler returned: it must capture the
  // request and response pointers by value.
  template <typename Work>
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* context, std::string_view method,
                                  Work&& work, std::string_view key = {});

  ModelRegistry* const registry_;
  const Limits limits_;
  const std::function<void()> on_models_changed_;
  metrics::RpcMetrics* const rpc_metrics_;
  Snapshotter* const snapshotter_;
  Executor* const executor_;
};

}  // namespace clickd

#endif  // CLICKD_SERVER_SERVICE_H_
