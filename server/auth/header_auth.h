// Authentication from a call's headers, before its message is read (issue
// 33, N2).
//
// A clickd.v1.Clickd handler checks access only once gRPC has read the
// request, so without this a caller with no credentials could make the
// server buffer up to --max_message_bytes per call (40 streams holding all
// but the last byte of 16 MiB messages: +645 MB). HeaderAuthProcessor runs
// in gRPC's server auth filter on a call's initial metadata: a call whose
// `authorization` header (or, under mTLS, client certificate) does not
// authenticate is refused with UNAUTHENTICATED there, and gRPC resets the
// stream without reading its message. Authorization by role stays in the
// handlers (server/auth/call_auth.h), which see the same headers.
// grpc.health.v1 calls are not checked (probes carry no credentials).
//
// gRPC's C++ InsecureServerCredentials refuse an AuthMetadataProcessor, so
// InsecureCredentialsWithAuth adds a plaintext port through the C core
// (whose insecure credentials run the auth filter) with the processor.
//
// Thread safety: HeaderAuthProcessor is safe for concurrent calls (it
// reads AuthFiles::Current()); the credentials are used by one
// ServerBuilder before the server starts.
#ifndef CLICKD_SERVER_AUTH_HEADER_AUTH_H_
#define CLICKD_SERVER_AUTH_HEADER_AUTH_H_

#include <grpcpp/security/auth_metadata_processor.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

#include "server/auth/auth_files.h"

namespace clickd::auth {

class HeaderAuthProcessor final : public grpc::AuthMetadataProcessor {
 public:
  // `files` must outlive the servers.
  explicit HeaderAuthProcessor(const AuthFiles* files) : files_(files) {}

  // A table lookup: run on the thread that processes the call.
  bool IsBlocking() const override { return false; }

  // OK, or UNAUTHENTICATED with the reason. `context` may be null (a
  // plaintext port: no certificate).
  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

 private:
  const AuthFiles* const files_;
};

// Plaintext server credentials that run `processor` on every call.
std::shared_ptr<grpc::ServerCredentials> InsecureCredentialsWithAuth(
    std::shared_ptr<grpc::AuthMetadataProcessor> processor);

}  // namespace clickd::auth

#endif  // CLICKD_SERVER_AUTH_HEADER_AUTH_H_
