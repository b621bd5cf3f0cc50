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

// What the digest's steps need. The copy must go before the model it
// copies: members are destroyed in reverse order.
struct DigestWork {
  StreamLimit::Ticket place;  // one of --max_concurrent_digests
  std::shared_ptr<ServedModel> served;
  std::unique_ptr<Model::StateCopy> copy;
  v1::ModelInfo info;
};

absl::Status OutOfMemory() {
  return absl::ResourceExhaustedError(
      "out of memory computing state_digest (a copy of the model's coordinates): the call "
      "failed, the model and the server go on");
}

void GetModelWithDigest(ClickdService* service, grpc::CallbackServerContext* context,
                        std::shared_ptr<GetModelCall> call) {
  // Taken before anything is copied or queued, and held until the copy is
  // freed: the digests' memory is at most this many copies.
  absl::StatusOr<StreamLimit::Ticket> place = service->StartDigest();
  if (!place.ok()) {
    call->Finish(place.status());
    return;
  }
  auto work = std::make_shared<DigestWork>();
  work->place = *std::move(place);
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
  auto refuse = [call](const absl::Status& status) { call->Finish(status); };
  service->RunCallWork(
      model,
      [service, call, alarm, work, model, deadline, refuse] {
        if (call->finished()) return;  // the deadline came first
        auto served = service->Lookup(model, "model");
        if (!served.ok()) {
          call->Finish(served.status());
          return;
        }
        work->info = service->Describe(**served);
        work->served = *std::move(served);
        try {
          // Learners are held off here (the model's key): microseconds,
          // or an eager copy while a snapshot's copy is open.
          work->copy = work->served->model().BeginStateCopy();
        } catch (const std::bad_alloc&) {
          call->Finish(OutOfMemory());
          return;
        }
        service->RunCallWork(
            /*key=*/"",
            [service, call, alarm, work, deadline] {
              const std::function<absl::Status()> stop = [&]() -> absl::Status {
                if (call->finished() || SystemClock::now() > deadline) {
                  return DeadlinePassedError();
                }
                if (service->Draining()) {
                  return absl::UnavailableError(
                      "the server is shutting down: state_digest stopped");
                }
                return absl::OkStatus();
              };
              absl::StatusOr<std::string> digest;
              try {
                digest = StateDigestUnless(*work->copy, stop);
              } catch (const std::bad_alloc&) {
                digest = OutOfMemory();
              }
              work->copy.reset();  // its memory goes before the response is written
              work->place = StreamLimit::Ticket();
              if (!digest.ok()) {
                call->Finish(digest.status());
                return;
              }
              work->info.set_state_digest(*std::move(digest));
              call->Finish(absl::OkStatus(),
                           [&] { *call->response()->mutable_model() = std::move(work->info); });
            },
            refuse);
      },
      refuse);
}

}  // namespace clickd
