// The one place where absl::Status becomes grpc::Status. The canonical codes
// are the same numbers in both, so the mapping is a cast.
#ifndef CLICKD_SERVER_STATUS_H_
#define CLICKD_SERVER_STATUS_H_

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"

namespace clickd {

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace clickd

#endif  // CLICKD_SERVER_STATUS_H_
