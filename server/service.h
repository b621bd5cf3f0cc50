// ClickdService: the clickd.v1.Clickd gRPC service on the callback API.
//
// Thin by design: each handler converts the request (server/convert.h),
// calls core (core/model/serving.h, core/model/registry.h) and converts the
// status once. Handlers do CPU work only, never block on I/O, and check the
// call's deadline before starting.
//
// Thread safety: safe for concurrent calls; all shared state is in the
// registry and the models, which synchronize themselves.
#ifndef CLICKD_SERVER_SERVICE_H_
#define CLICKD_SERVER_SERVICE_H_

#include <functional>
#include <memory>
#include <vector>

#include "clickd/v1/clickd.grpc.pb.h"
#include "core/model/registry.h"
#include "server/limits.h"

namespace clickd {

class ClickdService final : public v1::Clickd::CallbackService {
 public:
  // `on_models_changed` runs after every successful create or delete (the
  // server uses it to keep the health status current).
  ClickdService(ModelRegistry* registry, Limits limits, std::function<void()> on_models_changed);

  grpc::ServerUnaryReactor* Predict(grpc::CallbackServerContext* context,
                                    const v1::PredictRequest* request,
                                    v1::PredictResponse* response) override;
  grpc::ServerUnaryReactor* Update(grpc::CallbackServerContext* context,
                                   const v1::UpdateRequest* request,
                                   v1::UpdateResponse* response) override;
  grpc::ServerReadReactor<v1::UpdateRequest>* UpdateStream(
      grpc::CallbackServerContext* context, v1::UpdateStreamResponse* response) override;
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

 private:
  ModelRegistry* const registry_;
  const Limits limits_;
  const std::function<void()> on_models_changed_;
};

}  // namespace clickd

#endif  // CLICKD_SERVER_SERVICE_H_
