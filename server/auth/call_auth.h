// The access check every clickd.v1.Clickd handler runs first: is the
// method served on this address (--admin_address), and may this caller
// call it (server/auth/authorizer.h)? Reads the caller's identity off the
// call: the `authorization` metadata and, under mTLS, the verified client
// certificate's CN and subject alternative names from the auth context.
//
// Thread safety: AccessControl is immutable; CheckCall is safe to call
// concurrently.
#ifndef CLICKD_SERVER_AUTH_CALL_AUTH_H_
#define CLICKD_SERVER_AUTH_CALL_AUTH_H_

#include <grpcpp/server_context.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "server/auth/auth_files.h"
#include "server/auth/authorizer.h"

namespace clickd::auth {

struct AccessControl {
  // Null: auth is off, every caller may call every served method. Must
  // outlive the service.
  const AuthFiles* auth = nullptr;
  MethodSet methods = MethodSet::kAll;
};

// OK, or PERMISSION_DENIED / UNAUTHENTICATED for `method` (its bare name in
// clickd.v1.Clickd) called on `context`.
absl::Status CheckCall(const AccessControl& access, const grpc::ServerContextBase& context,
                       std::string_view method);

// The CN and subject alternative names of the call's client certificate, if
// the TLS handshake verified one (empty otherwise).
std::vector<std::string> VerifiedCertNames(const grpc::ServerContextBase& context);

}  // namespace clickd::auth

#endif  // CLICKD_SERVER_AUTH_CALL_AUTH_H_
