// Security of the real clickd binary (docs/security.md): TLS and mTLS with
// real certificates made by the `openssl` command into a fresh temporary
// directory, per-role authorization by bearer token and by client
// certificate, the admin address, the plaintext health address,
// certificate reload, reflection off by default, and the startup checks of
// the security flags.
//
// Every loop is bounded in iterations and in time; no assertion depends on
// how fast anything runs.
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/status.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "clickd/v1/clickd.grpc.pb.h"
#include "grpc/health/v1/health.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/server_process.h"

namespace clickd {
namespace {

using ::clickd::testing::CheckHealth;
using ::clickd::testing::FindFreePort;
using ::clickd::testing::RunClickd;
using ::clickd::testing::ServerOptions;
using ::clickd::testing::ServerProcess;
using ::grpc::StatusCode;
using std::chrono::milliseconds;
using std::chrono::seconds;

// See server_integration_test.cc: lets servers stop without waiting 5 s.
const bool kFastIdlePolling =
    setenv("GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS", "50", /*overwrite=*/0) == 0;

constexpr auto kCallTimeout = seconds(10);

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// A throwaway certificate authority in a fresh temporary directory, driven
// through the openssl command (EC P-256 keys: quick to make).
class Pki {
 public:
  Pki() {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir =
        absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/clickd_pki_XXXXXX");
    if (mkdtemp(dir.data()) != nullptr) dir_ = dir;
  }
  ~Pki() {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  const std::string& dir() const { return dir_; }
  std::string Path(const std::string& file) const { return dir_ + "/" + file; }
  std::string Read(const std::string& file) const { return ReadFile(Path(file)); }

  // Makes ca.crt and ca.key.
  bool MakeCa() {
    return Run(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
        "-keyout ca.key -out ca.crt -days 2 -subj /CN=clickd-test-ca");
  }

  // Makes NAME.crt and NAME.key, signed by the CA, with subject CN and the
  // extensions `ext` (an openssl extfile's lines).
  bool Issue(const std::string& name, const std::string& cn, int serial, const std::string& ext) {
    WriteFile(Path(name + ".ext"), ext);
    return Run(absl::StrCat("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 ",
                            "-nodes -keyout ", name, ".key -out ", name, ".csr -subj /CN=", cn,
                            " && openssl x509 -req -in ", name, ".csr -CA ca.crt -CAkey ca.key ",
                            "-set_serial ", serial, " -days 2 -out ", name, ".crt -extfile ", name,
                            ".ext"));
  }
  bool IssueServer(const std::string& name, const std::string& cn, int serial) {
    return Issue(name, cn, serial,
                 "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1\n"
                 "extendedKeyUsage=serverAuth\n");
  }
  bool IssueClient(const std::string& name, const std::string& cn, int serial) {
    return Issue(name, cn, serial, "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n");
  }

  // Channel credentials trusting the CA, with client certificate NAME (or
  // none if empty).
  std::shared_ptr<grpc::ChannelCredentials> Credentials(const std::string& client = "") const {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = Read("ca.crt");
    if (!client.empty()) {
      options.pem_private_key = Read(client + ".key");
      options.pem_cert_chain = Read(client + ".crt");
    }
    return grpc::SslCredentials(options);
  }

 private:
  bool Run(const std::string& command) {
    const std::string full = absl::StrCat("cd '", dir_, "' && (", command, ") >>openssl.log 2>&1");
    const int status = std::system(full.c_str());
    if (status != 0) ADD_FAILURE() << full << " failed:\n" << Read("openssl.log");
    return status == 0;
  }

  std::string dir_;
};

// A Pki with the CA, a server certificate for 127.0.0.1 and client
// certificates "trainer" and "ops".
std::unique_ptr<Pki> MakePki() {
  auto pki = std::make_unique<Pki>();
  if (pki->dir().empty() || !pki->MakeCa() || !pki->IssueServer("server", "clickd-server-1", 1) ||
      !pki->IssueClient("trainer", "trainer", 2) || !pki->IssueClient("ops", "ops", 3)) {
    return nullptr;
  }
  return pki;
}

std::vector<std::string> TlsFlags(const Pki& pki, bool mtls) {
  std::vector<std::string> flags = {"--tls_cert_file=" + pki.Path("server.crt"),
                                    "--tls_key_file=" + pki.Path("server.key")};
  if (mtls) flags.push_back("--tls_client_ca_file=" + pki.Path("ca.crt"));
  return flags;
}

std::unique_ptr<ServerProcess> Start(std::vector<std::string> flags,
                                     std::shared_ptr<grpc::ChannelCredentials> credentials) {
  ServerOptions options;
  options.flags = std::move(flags);
  options.channel_credentials = std::move(credentials);
  auto server = ServerProcess::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

void Prepare(grpc::ClientContext* context, const std::string& token) {
  context->set_deadline(std::chrono::system_clock::now() + kCallTimeout);
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
}

v1::Example OneFeature(const std::string& ns, const std::string& name) {
  v1::Example e;
  v1::Namespace* n = e.add_namespaces();
  n->set_name(ns);
  n->add_features()->set_name(name);
  return e;
}

v1::UpdateRequest OneUpdate() {
  v1::UpdateRequest r;
  r.set_model("default");
  v1::LabeledExample* le = r.add_examples();
  *le->mutable_example() = OneFeature("ad", "a1");
  le->set_label(1);
  return r;
}

// The methods of clickd.v1.Clickd in an order where each succeeds for a
// caller allowed to call it (DeleteModel deletes what CreateModel made).
const std::vector<std::string> kMethods = {"Predict",     "GetModel",     "ListModels",
                                           "Update",      "UpdateStream", "UpdateStreamAcked",
                                           "CreateModel", "DeleteModel",  "SnapshotModel"};

// The role each method needs (docs/security.md): 0 predict, 1 learn, 2 admin.
int NeededRole(const std::string& method) {
  if (method == "Predict" || method == "GetModel" || method == "ListModels") return 0;
  if (absl::StartsWith(method, "Update")) return 1;
  return 2;
}

// Calls `method` once with a valid request (model `created` for
// CreateModel and DeleteModel) and `token` (none if empty).
grpc::Status Call(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                  const std::string& token, const std::string& created = "made") {
  auto stub = v1::Clickd::NewStub(channel);
  grpc::ClientContext context;
  Prepare(&context, token);
  if (method == "Predict") {
    v1::PredictRequest request;
    request.set_model("default");
    *request.mutable_context() = OneFeature("user", "u1");
    *request.add_candidates() = OneFeature("ad", "a1");
    v1::PredictResponse response;
    return stub->Predict(&context, request, &response);
  }
  if (method == "GetModel") {
    v1::GetModelRequest request;
    request.set_model("default");
    v1::GetModelResponse response;
    return stub->GetModel(&context, request, &response);
  }
  if (method == "ListModels") {
    v1::ListModelsResponse response;
    return stub->ListModels(&context, v1::ListModelsRequest(), &response);
  }
  if (method == "Update") {
    v1::UpdateResponse response;
    return stub->Update(&context, OneUpdate(), &response);
  }
  if (method == "UpdateStream") {
    v1::UpdateStreamResponse response;
    auto stream = stub->UpdateStream(&context, &response);
    stream->Write(OneUpdate());
    stream->WritesDone();
    return stream->Finish();
  }
  if (method == "UpdateStreamAcked") {
    auto stream = stub->UpdateStreamAcked(&context);
    v1::UpdateAck ack;
    if (stream->Write(OneUpdate())) stream->Read(&ack);
    stream->WritesDone();
    return stream->Finish();
  }
  if (method == "CreateModel") {
    v1::CreateModelRequest request;
    request.mutable_config()->set_name(created);
    request.mutable_config()->set_optimizer("adagrad");
    v1::CreateModelResponse response;
    return stub->CreateModel(&context, request, &response);
  }
  if (method == "DeleteModel") {
    v1::DeleteModelRequest request;
    request.set_model(created);
    v1::DeleteModelResponse response;
    return stub->DeleteModel(&context, request, &response);
  }
  v1::SnapshotModelRequest request;
  request.set_model("default");
  v1::SnapshotModelResponse response;
  return stub->SnapshotModel(&context, request, &response);
}

std::string CodeName(StatusCode code) {
  switch (code) {
    case StatusCode::OK:
      return "OK";
    case StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    case StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    default:
      return absl::StrCat("code ", static_cast<int>(code));
  }
}

// The server's certificate CN as a new connection sees it ("" on failure).
std::string ServerCommonName(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = v1::Clickd::NewStub(channel);
  grpc::ClientContext context;
  Prepare(&context, "");
  v1::ListModelsResponse response;
  if (!stub->ListModels(&context, v1::ListModelsRequest(), &response).ok()) return "";
  auto auth = context.auth_context();
  if (auth == nullptr) return "";
  for (const auto& value : auth->FindPropertyValues("x509_common_name")) {
    return std::string(value.data(), value.size());
  }
  return "";
}

std::shared_ptr<grpc::Channel> ChannelTo(const std::string& address,
                                         std::shared_ptr<grpc::ChannelCredentials> credentials) {
  static int next = 0;
  grpc::ChannelArguments args;
  args.SetInt("clickd.test.security_channel", next++);
  return grpc::CreateCustomChannel(address, std::move(credentials), args);
}

TEST(ClickdTls, HandshakeWithTheCaPlaintextFailsReflectionOff) {
  auto pki = MakePki();
  ASSERT_NE(pki, nullptr);
  auto server = Start(TlsFlags(*pki, /*mtls=*/false), pki->Credentials());
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(Call(server->NewChannel(), "ListModels", "").ok());
  EXPECT_EQ(ServerCommonName(server->NewChannel()), "clickd-server-1");
  EXPECT_EQ(
      Call(server->NewChannel(grpc::InsecureChannelCredentials()), "ListModels", "").error_code(),
      StatusCode::UNAVAILABLE);
  // A client that does not trust the CA (the system roots) is refused too.
  EXPECT_EQ(Call(server->NewChannel(grpc::SslCredentials({})), "ListModels", "").error_code(),
            StatusCode::UNAVAILABLE);

  namespace reflection = ::grpc::reflection::v1alpha;
  auto stub = reflection::ServerReflection::NewStub(server->NewChannel());
  grpc::ClientContext context;
  Prepare(&context, "");
  auto stream = stub->ServerReflectionInfo(&context);
  reflection::ServerReflectionRequest request;
  request.set_list_services("");
  reflection::ServerReflectionResponse response;
  stream->Write(request);
  EXPECT_FALSE(stream->Read(&response));
  stream->WritesDone();
  EXPECT_EQ(stream->Finish().error_code(), StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
}

TEST(ClickdTls, MutualTlsRefusesAClientWithoutCertificate) {
  auto pki = MakePki();
  ASSERT_NE(pki, nullptr);
  auto server = Start(TlsFlags(*pki, /*mtls=*/true), pki->Credentials("trainer"));
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(Call(server->NewChannel(), "ListModels", "").ok());
  EXPECT_EQ(Call(server->NewChannel(pki->Credentials()), "ListModels", "").error_code(),
            StatusCode::UNAVAILABLE);
  EXPECT_EQ(
      Call(server->NewChannel(grpc::InsecureChannelCredentials()), "ListModels", "").error_code(),
      StatusCode::UNAVAILABLE);
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
}

TEST(ClickdAuth, TokenRolesFollowTheTable) {
  auto pki = MakePki();
  ASSERT_NE(pki, nullptr);
  const std::vector<std::string> tokens = {"predict-token-0123456789", "learn-token-0123456789ab",
                                           "admin-token-0123456789ab"};
  WriteFile(pki->Path("tokens"), absl::StrCat("# test tokens\npredict ", tokens[0], "\nlearn ",
                                              tokens[1], "\nadmin ", tokens[2], "\n"));
  std::vector<std::string> flags = TlsFlags(*pki, /*mtls=*/false);
  flags.push_back("--auth_tokens_file=" + pki->Path("tokens"));
  flags.push_back("--data_dir=" + pki->Path("data"));
  auto server = Start(flags, pki->Credentials());
  ASSERT_NE(server, nullptr);
  auto channel = server->NewChannel();
  for (int role = 0; role < 3; ++role) {
    for (const std::string& method : kMethods) {
      const grpc::Status status = Call(channel, method, tokens[role], absl::StrCat("m", role));
      const bool allowed = role >= NeededRole(method);
      EXPECT_EQ(CodeName(status.error_code()), allowed ? "OK" : "PERMISSION_DENIED")
          << "role " << role << " " << method << ": " << status.error_message();
      if (!allowed) {
        EXPECT_TRUE(absl::StrContains(status.error_message(), method)) << status.error_message();
        EXPECT_TRUE(absl::StrContains(status.error_message(), "needs role"))
            << status.error_message();
        EXPECT_FALSE(absl::StrContains(status.error_message(), "token-")) << "echoes a token";
      }
    }
  }
  for (const std::string& method : kMethods) {
    EXPECT_EQ(CodeName(Call(channel, method, "").error_code()), "UNAUTHENTICATED") << method;
    const grpc::Status wrong = Call(channel, method, "wrong-token-0123456789ab");
    EXPECT_EQ(CodeName(wrong.error_code()), "UNAUTHENTICATED") << method;
    EXPECT_FALSE(absl::StrContains(wrong.error_message(), "wrong-token")) << "echoes the token";
  }
  channel.reset();
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
}

// GetModel with state_digest copies and hashes the whole model (issue 33,
// N4): it needs the admin role; GetModel without it stays a predict call.
TEST(ClickdAuth, StateDigestNeedsTheAdminRole) {
  auto pki = MakePki();
  ASSERT_NE(pki, nullptr);
  const std::vector<std::string> tokens = {"predict-token-0123456789", "learn-token-0123456789ab",
                                           "admin-token-0123456789ab"};
  WriteFile(pki->Path("tokens"), absl::StrCat("predict ", tokens[0], "\nlearn ", tokens[1],
                                              "\nadmin ", tokens[2], "\n"));
  std::vector<std::string> flags = TlsFlags(*pki, /*mtls=*/false);
  flags.push_back("--auth_tokens_file=" + pki->Path("tokens"));
  auto server = Start(flags, pki->Credentials());
  ASSERT_NE(server, nullptr);
  auto stub = v1::Clickd::NewStub(server->NewChannel());
  for (int role = 0; role < 3; ++role) {
    for (bool digest : {false, true}) {
      grpc::ClientContext context;
      Prepare(&context, tokens[role]);
      v1::GetModelRequest request;
      request.set_model("default");
      request.set_state_digest(digest);
      v1::GetModelResponse response;
      const grpc::Status status = stub->GetModel(&context, request, &response);
      if (!digest || role == 2) {
        EXPECT_TRUE(status.ok()) << role << " " << digest << ": " << status.error_message();
        EXPECT_EQ(response.model().state_digest().size(), digest ? 16u : 0u);
        continue;
      }
      EXPECT_EQ(CodeName(status.error_code()), "PERMISSION_DENIED") << role;
      EXPECT_TRUE(
          absl::StrContains(status.error_message(), "GetModel(state_digest) needs role admin"))
          << status.error_message();
    }
  }
  stub.reset();
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
}

TEST(ClickdAuth, ReloadsTheTokensFile) {
  auto pki = MakePki();
  ASSERT_NE(pki, nullptr);
  const std::string old_token = "old-token-0123456789ab";
  const std::string new_token = "new-token-0123456789ab";
  WriteFile(pki->Path("tokens"), "admin " + old_token + "\n");
  auto server = Start(
      {"--auth_tokens_file=" + pki->Path("tokens"), "--auth_reload_interval_seconds=1"}, nullptr);
  ASSERT_NE(server, nullptr);
  auto channel = server->NewChannel();
  ASSERT_EQ(CodeName(Call(channel, "ListModels", old_token).error_code()), "OK");

  // Replaced atomically, as a Kubernetes Secret update does.
  WriteFile(pki->Path("tokens.new"), "predict " + new_token + "\n");
  std::filesystem::rename(pki->Path("tokens.new"), pki->Path("tokens"));
  std::string code;
  for (int attempt = 0; attempt < 120 && code != "OK"; ++attempt) {
    std::this_thread::sleep_for(milliseconds(250));
    code = CodeName(Call(channel, "ListModels", new_token).error_code());
  }
  EXPECT_EQ(code, "OK");
  EXPECT_EQ(CodeName(Call(channel, "ListModels", old_token).error_code()), "UNAUTHENTICATED");
  EXPECT_EQ(CodeName(Call(channel, "CreateModel", new_token).error_code()), "PERMISSION_DENIED");

  // A broken file leaves the tokens in force.
  WriteFile(pki->Path("tokens.new"), "predict\n");
  std::filesystem::rename(pki->Path("tokens.new"), pki->Path("tokens"));
  bool reported = false;
  for (int attempt = 0; attempt < 120 && !reported; ++attempt) {
    std::this_thread::sleep_for(milliseconds(250));
    reported = absl::StrContains(server->Output(), "auth files not reloaded");
  }
  EXPECT_TRUE(reported) << server->Output();
  EXPECT_EQ(CodeName(Call(channel, "ListModels", new_token).error_code()), "OK");
  channel.reset();
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
}

TEST(ClickdAuth, CertificateRoles) {
  auto pki = MakePki();
  ASSERT_NE(pki, nullptr);
  WriteFile(pki->Path("cert_roles"), "learn trainer\nadmin ops\n");
  std::vector<std::string> flags = TlsFlags(*pki, /*mtls=*/true);
  flags.push_back("--auth_cert_roles_file=" + pki->Path("cert_roles"));
  auto server = Start(flags, pki->Credentials("trainer"));
  ASSERT_NE(server, nullptr);
  auto trainer = server->NewChannel();
  auto ops = server->NewChannel(pki->Credentials("ops"));
  EXPECT_EQ(CodeName(Call(trainer, "Update", "").error_code()), "OK");
  const grpc::Status denied = Call(trainer, "CreateModel", "");
  EXPECT_EQ(CodeName(denied.error_code()), "PERMISSION_DENIED");
  EXPECT_TRUE(absl::StrContains(denied.error_message(), "trainer")) << denied.error_message();
  EXPECT_EQ(CodeName(Call(ops, "CreateModel", "").error_code()), "OK");
  EXPECT_EQ(CodeName(Call(ops, "DeleteModel", "").error_code()), "OK");
  trainer.reset();
  ops.reset();
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
}

TEST(ClickdAdminAddress, AdminMethodsOnlyThereHealthInPlaintext) {
  auto pki = MakePki();
  ASSERT_NE(pki, nullptr);
  auto admin_port = FindFreePort();
  auto health_port = FindFreePort();
  ASSERT_TRUE(admin_port.ok() && health_port.ok());
  const std::string admin_address = absl::StrCat("127.0.0.1:", *admin_port);
  const std::string health_address = absl::StrCat("127.0.0.1:", *health_port);
  std::vector<std::string> flags = TlsFlags(*pki, /*mtls=*/false);
  flags.push_back("--admin_address=" + admin_address);
  flags.push_back("--health_address=" + health_address);
  auto server = Start(flags, pki->Credentials());
  ASSERT_NE(server, nullptr);
  auto main = server->NewChannel();
  auto admin = ChannelTo(admin_address, pki->Credentials());
  for (const std::string& method : kMethods) {
    const bool admin_method = NeededRole(method) == 2;
    const grpc::Status on_main = Call(main, method, "");
    EXPECT_EQ(CodeName(on_main.error_code()), admin_method ? "PERMISSION_DENIED" : "OK") << method;
    if (admin_method) {
      EXPECT_TRUE(absl::StrContains(on_main.error_message(), "served on the admin address"))
          << on_main.error_message();
    }
    const grpc::Status on_admin = Call(admin, method, "");
    // SnapshotModel without --data_dir is FAILED_PRECONDITION: served, not refused.
    // GetModel is served on both, for its state_digest (admin role).
    if (admin_method || method == "GetModel") {
      EXPECT_NE(CodeName(on_admin.error_code()), "PERMISSION_DENIED") << method;
    } else {
      EXPECT_EQ(CodeName(on_admin.error_code()), "PERMISSION_DENIED") << method;
    }
  }
  auto health = ChannelTo(health_address, grpc::InsecureChannelCredentials());
  EXPECT_EQ(CheckHealth(health).value_or(grpc::health::v1::HealthCheckResponse::UNKNOWN),
            grpc::health::v1::HealthCheckResponse::SERVING);
  const grpc::Status on_health = Call(health, "ListModels", "");
  EXPECT_EQ(CodeName(on_health.error_code()), "PERMISSION_DENIED");
  EXPECT_TRUE(absl::StrContains(on_health.error_message(), "not served on the health address"))
      << on_health.error_message();
  main.reset();
  admin.reset();
  health.reset();
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
}

TEST(ClickdTls, WarnsAboutPlaintextOnANonLoopbackAddress) {
  auto pki = MakePki();
  ASSERT_NE(pki, nullptr);
  // --address is 127.0.0.1 (ServerProcess's); the admin address is not.
  auto plaintext = Start({"--admin_address=0.0.0.0:0"}, nullptr);
  ASSERT_NE(plaintext, nullptr);
  EXPECT_TRUE(absl::StrContains(plaintext->Output(),
                                "WARNING: --admin_address=0.0.0.0:0 listens on a non-loopback "
                                "address WITHOUT TLS"))
      << plaintext->Output();
  EXPECT_FALSE(absl::StrContains(plaintext->Output(), "WARNING: --address"));
  EXPECT_EQ(plaintext->Stop().ToString(), "exit 0");

  std::vector<std::string> flags = TlsFlags(*pki, /*mtls=*/false);
  flags.push_back("--admin_address=0.0.0.0:0");
  auto tls = Start(flags, pki->Credentials());
  ASSERT_NE(tls, nullptr);
  EXPECT_FALSE(absl::StrContains(tls->Output(), "WARNING")) << tls->Output();
  EXPECT_EQ(tls->Stop().ToString(), "exit 0");
}

TEST(ClickdTls, ReloadsARotatedCertificate) {
  auto pki = MakePki();
  ASSERT_NE(pki, nullptr);
  std::vector<std::string> flags = TlsFlags(*pki, /*mtls=*/false);
  flags.push_back("--tls_refresh_interval_seconds=1");
  auto server = Start(flags, pki->Credentials());
  ASSERT_NE(server, nullptr);
  ASSERT_EQ(ServerCommonName(server->NewChannel()), "clickd-server-1");

  ASSERT_TRUE(pki->IssueServer("rotated", "clickd-server-2", 42));
  // Each file replaced atomically, as a Kubernetes Secret update does.
  std::filesystem::rename(pki->Path("rotated.key"), pki->Path("server.key"));
  std::filesystem::rename(pki->Path("rotated.crt"), pki->Path("server.crt"));
  std::string seen;
  for (int attempt = 0; attempt < 120 && seen != "clickd-server-2"; ++attempt) {
    std::this_thread::sleep_for(milliseconds(250));
    seen = ServerCommonName(server->NewChannel());
  }
  EXPECT_EQ(seen, "clickd-server-2");
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
}

TEST(ClickdSecurityFlags, BadValuesExit2NamingTheFlag) {
  auto pki = MakePki();
  ASSERT_NE(pki, nullptr);
  WriteFile(pki->Path("bad_tokens"), "predict 0123456789abcdef0123\nlearn\n");
  WriteFile(pki->Path("roles"), "learn trainer\n");
  const std::string cert = "--tls_cert_file=" + pki->Path("server.crt");
  const std::string key = "--tls_key_file=" + pki->Path("server.key");
  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--admin_address=nowhere"}, "--admin_address=nowhere"},
      {{"--health_address=127.0.0.1:99999"}, "--health_address="},
      {{"--tls_cert_file=/nonexistent.crt", key}, "--tls_cert_file=/nonexistent.crt"},
      {{cert, "--tls_key_file=" + pki->Path("ops.key")}, "--tls_key_file="},
      {{cert}, "--tls_cert_file and --tls_key_file"},
      {{cert, key, "--tls_client_ca_file=/nonexistent.crt"}, "--tls_client_ca_file="},
      {{"--tls_client_ca_file=" + pki->Path("ca.crt")}, "--tls_client_ca_file"},
      {{cert, key, "--tls_refresh_interval_seconds=0"}, "--tls_refresh_interval_seconds"},
      {{"--auth_tokens_file=" + pki->Path("bad_tokens")}, "--auth_tokens_file"},
      {{"--auth_tokens_file=/nonexistent"}, "--auth_tokens_file"},
      {{"--auth_reload_interval_seconds=-1"}, "--auth_reload_interval_seconds"},
      {{cert, key, "--auth_cert_roles_file=" + pki->Path("roles")}, "--auth_cert_roles_file"},
  };
  for (const Case& c : cases) {
    const auto run = RunClickd(c.flags);
    EXPECT_EQ(run.status.ToString(), "exit 2") << c.message << "\n" << run.output;
    EXPECT_TRUE(absl::StrContains(run.output, c.message)) << run.output;
  }
  const auto run = RunClickd({"--auth_tokens_file=" + pki->Path("bad_tokens")});
  EXPECT_TRUE(absl::StrContains(run.output, "line 2: empty token")) << run.output;
}

}  // namespace
}  // namespace clickd
