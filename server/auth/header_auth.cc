#include "server/auth/header_auth.h"

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/grpc_security_constants.h>
#include <grpc/slice.h>
#include <grpcpp/security/auth_context.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "server/auth/authorizer.h"

namespace clickd::auth {
namespace {

constexpr absl::string_view kHealthPrefix = "/grpc.health.v1.Health/";

absl::string_view View(const grpc::string_ref& s) { return absl::string_view(s.data(), s.size()); }

absl::string_view View(const grpc_slice& s) {
  return absl::string_view(reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(s)),
                           GRPC_SLICE_LENGTH(s));
}

// Plaintext credentials of the C core with `processor` run on each call:
// the C++ InsecureServerCredentials refuse a processor (GPR_ASSERT).
class InsecureWithAuth final : public grpc::ServerCredentials {
 public:
  explicit InsecureWithAuth(std::shared_ptr<grpc::AuthMetadataProcessor> processor)
      : processor_(std::move(processor)) {}

  void SetAuthMetadataProcessor(
      const std::shared_ptr<grpc::AuthMetadataProcessor>& processor) override {
    processor_ = processor;
  }

 private:
  int AddPortToServer(const std::string& address, grpc_server* server) override {
    grpc_server_credentials* credentials = grpc_insecure_server_credentials_create();
    // The core's credentials outlive these (the server holds them), so the
    // processor's state owns a reference of its own, dropped by Destroy.
    grpc_server_credentials_set_auth_metadata_processor(
        credentials,
        {&Process, &Destroy, new std::shared_ptr<grpc::AuthMetadataProcessor>(processor_)});
    const int port = grpc_server_add_http2_port(server, address.c_str(), credentials);
    grpc_server_credentials_release(credentials);
    return port;
  }

  static void Destroy(void* state) {
    delete static_cast<std::shared_ptr<grpc::AuthMetadataProcessor>*>(state);
  }

  // Adapts the C core's processor callback to the C++ processor.
  static void Process(void* state, grpc_auth_context* /*context*/, const grpc_metadata* metadata,
                      size_t count, grpc_process_auth_metadata_done_cb done, void* user_data) {
    grpc::AuthMetadataProcessor* processor =
        static_cast<std::shared_ptr<grpc::AuthMetadataProcessor>*>(state)->get();
    grpc::AuthMetadataProcessor::InputMetadata input;
    for (size_t i = 0; i < count; ++i) {
      const absl::string_view key = View(metadata[i].key);
      const absl::string_view value = View(metadata[i].value);
      input.emplace(grpc::string_ref(key.data(), key.size()),
                    grpc::string_ref(value.data(), value.size()));
    }
    grpc::AuthMetadataProcessor::OutputMetadata consumed;
    grpc::AuthMetadataProcessor::OutputMetadata response;
    const grpc::Status status = processor->Process(input, nullptr, &consumed, &response);
    done(user_data, nullptr, 0, nullptr, 0, static_cast<grpc_status_code>(status.error_code()),
         status.ok() ? nullptr : status.error_message().c_str());
  }

  std::shared_ptr<grpc::AuthMetadataProcessor> processor_;
};

}  // namespace

grpc::Status HeaderAuthProcessor::Process(const InputMetadata& auth_metadata,
                                          grpc::AuthContext* context,
                                          OutputMetadata* /*consumed_auth_metadata*/,
                                          OutputMetadata* /*response_metadata*/) {
  absl::string_view path;
  if (auto it = auth_metadata.find(":path"); it != auth_metadata.end()) path = View(it->second);
  if (absl::StartsWith(path, kHealthPrefix)) return grpc::Status::OK;
  const std::shared_ptr<const Authorizer> authorizer = files_->Current();
  if (!authorizer->enabled()) return grpc::Status::OK;
  std::optional<absl::string_view> authorization;
  if (auto it = auth_metadata.find("authorization"); it != auth_metadata.end()) {
    authorization = View(it->second);
  }
  std::vector<std::string> cert_names;
  if (context != nullptr && context->IsPeerAuthenticated()) {
    for (const char* property : {GRPC_X509_CN_PROPERTY_NAME, GRPC_X509_SAN_PROPERTY_NAME}) {
      for (const grpc::string_ref& value : context->FindPropertyValues(property)) {
        cert_names.emplace_back(value.data(), value.size());
      }
    }
  }
  const Identity identity = authorizer->Identify(authorization, cert_names);
  if (identity.authenticated) return grpc::Status::OK;
  // The method's bare name, as the handlers' messages say it.
  const absl::Status refused = Authorize(path.substr(path.rfind('/') + 1), identity);
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(refused.message()));
}

std::shared_ptr<grpc::ServerCredentials> InsecureCredentialsWithAuth(
    std::shared_ptr<grpc::AuthMetadataProcessor> processor) {
  return std::make_shared<InsecureWithAuth>(std::move(processor));
}

}  // namespace clickd::auth
