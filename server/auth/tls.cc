#include "server/auth/tls.h"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace clickd::auth {
namespace {

struct BioCloser {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Freer {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFreer {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Bio = std::unique_ptr<BIO, BioCloser>;

absl::StatusOr<Bio> OpenFile(absl::string_view flag, const std::string& path) {
  Bio bio(BIO_new_file(path.c_str(), "r"));
  if (bio == nullptr)
    return absl::InvalidArgumentError(absl::StrCat(flag, "=", path, ": cannot read"));
  return bio;
}

absl::StatusOr<std::unique_ptr<X509, X509Freer>> ReadCert(absl::string_view flag,
                                                          const std::string& path) {
  auto bio = OpenFile(flag, path);
  if (!bio.ok()) return bio.status();
  std::unique_ptr<X509, X509Freer> cert(PEM_read_bio_X509(bio->get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(flag, "=", path, ": no PEM certificate"));
  }
  return cert;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TlsServerCredentialsFromFiles(
    const TlsFiles& files) {
  if (files.cert_file.empty() != files.key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert_file and --tls_key_file go together");
  }
  if (files.refresh_interval_seconds < 1 || files.refresh_interval_seconds > 86'400) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_refresh_interval_seconds=", files.refresh_interval_seconds,
                     " must be in [1, 86400]"));
  }
  auto cert = ReadCert("--tls_cert_file", files.cert_file);
  if (!cert.ok()) return cert.status();
  auto key_bio = OpenFile("--tls_key_file", files.key_file);
  if (!key_bio.ok()) return key_bio.status();
  std::unique_ptr<EVP_PKEY, KeyFreer> key(
      PEM_read_bio_PrivateKey(key_bio->get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_key_file=", files.key_file, ": no PEM private key (or encrypted)"));
  }
  if (X509_check_private_key(cert->get(), key.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls_key_file=", files.key_file, " is not the key of --tls_cert_file=", files.cert_file));
  }
  const bool mtls = !files.client_ca_file.empty();
  if (mtls) {
    if (auto ca = ReadCert("--tls_client_ca_file", files.client_ca_file); !ca.ok()) {
      return ca.status();
    }
  }
  const unsigned refresh = static_cast<unsigned>(files.refresh_interval_seconds);
  auto provider = mtls ? std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
                             files.key_file, files.cert_file, files.client_ca_file, refresh)
                       : std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
                             files.key_file, files.cert_file, refresh);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (mtls) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::experimental::TlsServerCredentials(options);
  if (credentials == nullptr) return absl::InternalError("gRPC refused the TLS options");
  return credentials;
}

absl::Status CheckAddress(absl::string_view flag, absl::string_view address) {
  const size_t colon = address.rfind(':');
  absl::string_view host = colon == absl::string_view::npos ? "" : address.substr(0, colon);
  const absl::string_view port = colon == absl::string_view::npos ? "" : address.substr(colon + 1);
  if (absl::ConsumePrefix(&host, "[") && !absl::ConsumeSuffix(&host, "]")) host = "";
  int number = -1;
  if (host.empty() || absl::StrContains(host, '[') ||
      (!absl::StrContains(address, '[') && absl::StrContains(host, ':')) ||
      !absl::SimpleAtoi(port, &number) || number < 0 || number > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, "=", address, " is not HOST:PORT or [IPV6]:PORT with a port in 0..65535"));
  }
  return absl::OkStatus();
}

bool IsLoopbackAddress(absl::string_view address) {
  const size_t colon = address.rfind(':');
  absl::string_view host = colon == absl::string_view::npos ? address : address.substr(0, colon);
  return absl::StartsWith(host, "127.") || host == "[::1]" || host == "localhost";
}

}  // namespace clickd::auth
