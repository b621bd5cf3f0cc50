// ClickdService: the clickd.v1.Clickd gRPC service on the callback API.
//
// Thin by design: each handler converts the request (server/convert.h),
// calls core (core/model/serving.h, core/model/registry.h) and converts the
// status once, after checking the call's deadline. Predict does CPU work
// only. The update calls of a durable model wait for the update log's sync
// (--update_log_sync=every_request) and SnapshotModel writes a file, on the
// gRPC callback thread: a sync is short and shared by concurrent callers
// (group commit), and these calls are few next to Predict.
//
// Every finished call, failures included, is recorded in the request
// metrics (server/metrics/rpc_metrics.h) when the service has them.
//
// Every handler first checks access (server/auth/call_auth.h): whether the
// method is served on this address and whether the caller's role allows it.
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
#include "server/auth/call_auth.h"
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
  // `access` says which methods this instance serves and who may call them
  // (by default: all, to everyone).
  ClickdService(ModelRegistry* registry, Limits limits, std::function<void()> on_models_changed,
                metrics::RpcMetrics* rpc_metrics = nullptr, Snapshotter* snapshotter = nullptr,
                auth::AccessControl access = {});

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

  // OK if this service serves `method` and the caller may call it; else
  // PERMISSION_DENIED or UNAUTHENTICATED. Every handler calls it first.
  absl::Status CheckAccess(const grpc::CallbackServerContext* context,
                           std::string_view method) const;

  // Records a finished call of `method` (its name in clickd.v1.Clickd) in
  // the request metrics, if any.
  void RecordRequest(std::string_view method, absl::StatusCode code, double seconds) const;

 private:
  // Runs a unary call of `method`: checks the deadline, runs `work`,
  // records the call and finishes it with work's status.
  template <typename Work>
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* context, std::string_view method,
                                  Work&& work);

  ModelRegistry* const registry_;
  const Limits limits_;
  const std::function<void()> on_models_changed_;
  metrics::RpcMetrics* const rpc_metrics_;
  Snapshotter* const snapshotter_;
  const auth::AccessControl access_;
};

}  // namespace clickd

#endif  // CLICKD_SERVER_SERVICE_H_
