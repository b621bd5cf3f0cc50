// Small helpers every handler of the service shares.
#ifndef CLICKD_SERVER_CALL_UTIL_H_
#define CLICKD_SERVER_CALL_UTIL_H_

#include <grpcpp/server_context.h>

#include <chrono>

#include "absl/status/status.h"

namespace clickd {

inline bool DeadlinePassed(const grpc::CallbackServerContext* context) {
  return context->deadline() < std::chrono::system_clock::now();
}

inline absl::Status DeadlinePassedError() {
  return absl::DeadlineExceededError("the call's deadline passed before it was served");
}

inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace clickd

#endif  // CLICKD_SERVER_CALL_UTIL_H_
