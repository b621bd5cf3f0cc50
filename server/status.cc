#include "server/status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace clickd {

std::string CallerMessage(absl::string_view message, absl::string_view private_prefix) {
  std::string out = private_prefix.empty()
                        ? std::string(message)
                        : absl::StrReplaceAll(message, {{private_prefix, "<data_dir>"}});
  if (out.size() > kMaxCallerMessageBytes) {
    const std::string cut = absl::StrCat("... (", out.size(), " bytes; cut)");
    out.resize(kMaxCallerMessageBytes - cut.size());
    out += cut;
  }
  return out;
}

grpc::Status ToGrpcStatus(const absl::Status& status, absl::string_view private_prefix) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      CallerMessage(status.message(), private_prefix));
}

}  // namespace clickd
