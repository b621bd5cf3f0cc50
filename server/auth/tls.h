// TLS for clickd's gRPC addresses, and the checks of the address and file
// flags that main.cc runs before anything starts (docs/security.md).
//
// The certificates are read by gRPC's FileWatcherCertificateProvider, which
// re-reads the files every refresh interval: a rotated certificate (say, a
// Kubernetes Secret updated by cert-manager) is served to new connections
// without a restart. A pair that does not match (the key and the cert
// replaced one after the other) is ignored until both are there.
//
// Thread safety: free functions without shared state.
#ifndef CLICKD_SERVER_AUTH_TLS_H_
#define CLICKD_SERVER_AUTH_TLS_H_

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace clickd::auth {

struct TlsFiles {
  std::string cert_file;       // PEM certificate chain of the server
  std::string key_file;        // PEM private key of that certificate
  std::string client_ca_file;  // PEM CA bundle; set: clients need a cert it signed (mTLS)
  int refresh_interval_seconds = 60;
};

// Checks the files now (readable PEM, the key matches the certificate, the
// CA bundle parses), naming the flag at fault, and returns credentials that
// watch them.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TlsServerCredentialsFromFiles(
    const TlsFiles& files);

// Checks that `address` is HOST:PORT or [IPV6]:PORT with a port in
// 0..65535; the error names `flag`.
absl::Status CheckAddress(absl::string_view flag, absl::string_view address);

// True for 127.0.0.0/8, ::1 and localhost: addresses no other host reaches.
bool IsLoopbackAddress(absl::string_view address);

}  // namespace clickd::auth

#endif  // CLICKD_SERVER_AUTH_TLS_H_
