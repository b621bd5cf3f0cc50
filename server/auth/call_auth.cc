#include "server/auth/call_auth.h"

#include <grpc/grpc_security_constants.h>
#include <grpcpp/security/auth_context.h>

#include <optional>

namespace clickd::auth {

std::vector<std::string> VerifiedCertNames(const grpc::ServerContextBase& context) {
  std::vector<std::string> names;
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) return names;
  for (const char* property : {GRPC_X509_CN_PROPERTY_NAME, GRPC_X509_SAN_PROPERTY_NAME}) {
    for (const grpc::string_ref& value : auth->FindPropertyValues(property)) {
      names.emplace_back(value.data(), value.size());
    }
  }
  return names;
}

absl::Status CheckCall(const AccessControl& access, const grpc::ServerContextBase& context,
                       std::string_view method) {
  const absl::string_view name(method.data(), method.size());
  if (absl::Status s = CheckServed(name, access.methods); !s.ok()) return s;
  if (access.auth == nullptr) return absl::OkStatus();
  const std::shared_ptr<const Authorizer> authorizer = access.auth->Current();
  if (!authorizer->enabled()) return absl::OkStatus();
  std::optional<absl::string_view> authorization;
  const auto& metadata = context.client_metadata();
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    authorization = absl::string_view(it->second.data(), it->second.size());
  }
  return Authorize(name, authorizer->Identify(authorization, VerifiedCertNames(context)));
}

}  // namespace clickd::auth
