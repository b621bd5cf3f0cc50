// Small helpers every handler of the service shares.
#ifndef CLICKD_SERVER_CALL_UTIL_H_
#define CLICKD_SERVER_CALL_UTIL_H_

#include <grpcpp/server_context.h>

#include <chrono>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

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

// Runs `work` (returning absl::Status), turning an exception into a status:
// the callback API would otherwise answer UNIMPLEMENTED with no message (or,
// on an executor's worker, end the process).
template <typename Work>
absl::Status Guarded(std::string_view method_name, Work& work) {
  const std::string method(method_name);
  try {
    return work();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat("out of memory serving ", method));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("internal error in ", method, ": ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat("internal error in ", method));
  }
}

}  // namespace clickd

#endif  // CLICKD_SERVER_CALL_UTIL_H_
