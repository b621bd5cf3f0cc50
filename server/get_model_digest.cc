#include "server/get_model_digest.h"

#include <grpcpp/alarm.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "core/model/state_digest.h"
#include "server/call_util.h"
#include "server/service.h"
#include "server/status.h"
#include "wire/model_info_proto.h"

namespace clickd {

using SystemClock = std::chrono::system_clock;

// Holds the alarm beside the call: the alarm must not keep the call alive.
struct DigestAlarm {
  grpc::Alarm alarm;  // cancelled when destroyed
};

void GetModelWithDigest(ClickdService* service, grpc::CallbackServerContext* context,
                        std::shared_ptr<GetModelCall> call) {
  const SystemClock::time_point deadline = context->deadline();
  std::shared_ptr<DigestAlarm> alarm;
  if (deadline != SystemClock::time_point::max()) {
    alarm = std::make_shared<DigestAlarm>();
    std::weak_ptr<GetModelCall> weak = call;
    alarm->alarm.Set(deadline, [weak](bool expired) {
      if (!expired) return;
      if (auto c = weak.lock()) c->Finish(DeadlinePassedError());
    });
  }
  const std::string model = call->request().model();
  service->RunCallWork(
      model,
      [service, call, alarm, model, deadline] {
        if (call->finished()) return;  // the deadline came first
        auto served = service->Lookup(model, "model");
        if (!served.ok()) {
          call->Finish(served.status());
          return;
        }
        v1::ModelInfo info = service->Describe(**served);
        try {
          info.set_state_digest(StateDigest((*served)->model()));
        } catch (const std::bad_alloc&) {
          // The copy of the model the digest hashes did not fit.
          call->Finish(absl::ResourceExhaustedError(
              "out of memory computing state_digest (a copy of the whole model): the call "
              "failed, the model and the server go on"));
          return;
        }
        if (SystemClock::now() > deadline) {
          call->Finish(DeadlinePassedError());
          return;
        }
        call->Finish(absl::OkStatus(),
                     [&] { *call->response()->mutable_model() = std::move(info); });
      },
      [call, alarm](const absl::Status& status) { call->Finish(status); });
}

}  // namespace clickd
