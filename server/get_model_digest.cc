#include "server/get_model_digest.h"

#include <grpcpp/alarm.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "core/model/state_digest.h"
#include "server/call_util.h"
#include "server/convert.h"
#include "server/service.h"
#include "server/status.h"

namespace clickd {
namespace {

using SteadyClock = std::chrono::steady_clock;
using SystemClock = std::chrono::system_clock;

// The call's single finish, claimed by the worker or by the deadline.
class DigestCall {
 public:
  DigestCall(ClickdService* service, grpc::ServerUnaryReactor* reactor)
      : service_(service), reactor_(reactor), start_(SteadyClock::now()) {}

  // Finishes the call with `status` unless it is finished already; `fill`
  // (may be null) writes the response first. Returns whether it finished.
  bool Finish(const absl::Status& status, const std::function<void()>& fill) {
    if (finished_.exchange(true)) return false;
    if (fill) fill();
    service_->RecordRequest("GetModel", status.code(), SecondsSince(start_));
    reactor_->Finish(ToGrpcStatus(status));
    return true;
  }
  bool finished() const { return finished_.load(); }
  grpc::Alarm& alarm() { return alarm_; }

 private:
  ClickdService* const service_;
  grpc::ServerUnaryReactor* const reactor_;
  const SteadyClock::time_point start_;
  std::atomic<bool> finished_{false};
  grpc::Alarm alarm_;  // cancelled when the call is destroyed
};

}  // namespace

grpc::ServerUnaryReactor* GetModelWithDigest(ClickdService* service,
                                             grpc::CallbackServerContext* context,
                                             const v1::GetModelRequest* request,
                                             v1::GetModelResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto call = std::make_shared<DigestCall>(service, reactor);
  const SystemClock::time_point deadline = context->deadline();
  if (deadline != SystemClock::time_point::max()) {
    // A weak reference: the alarm must not keep the call (and itself) alive.
    std::weak_ptr<DigestCall> weak = call;
    call->alarm().Set(deadline, [weak](bool expired) {
      if (!expired) return;
      if (auto c = weak.lock()) c->Finish(DeadlinePassedError(), nullptr);
    });
  }
  const std::string model = request->model();
  service->RunCallWork(
      model,
      [service, call, model, deadline, response] {
        if (call->finished()) return;  // the deadline came first
        auto served = service->Lookup(model, "model");
        if (!served.ok()) {
          call->Finish(served.status(), nullptr);
          return;
        }
        v1::ModelInfo info = ToModelInfo(**served);
        info.set_state_digest(StateDigest((*served)->model()));
        if (SystemClock::now() > deadline) {
          call->Finish(DeadlinePassedError(), nullptr);
          return;
        }
        call->Finish(absl::OkStatus(), [&] { *response->mutable_model() = std::move(info); });
      },
      [call](const absl::Status& status) { call->Finish(status, nullptr); });
  return reactor;
}

}  // namespace clickd
