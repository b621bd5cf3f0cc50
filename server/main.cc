// clickd: the online click-prediction server.
//
//   clickd [--address=127.0.0.1:50051] [--config=models.json] [--default_model]
//          [--metrics_address=127.0.0.1] [--metrics_port=9464]
//
// Serves clickd.v1.Clickd, grpc.health.v1 (SERVING once a model is loaded)
// and server reflection, and Prometheus metrics at
// http://METRICS_ADDRESS:METRICS_PORT/metrics (docs/metrics.md). SIGTERM or
// SIGINT drains in-flight calls (up to --shutdown_grace_seconds), stops the
// metrics server and exits 0.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "core/base/mutex.h"
#include "core/model/registry.h"
#include "google/protobuf/descriptor.h"
#include "server/metrics/clickd_metrics.h"
#include "server/metrics/http_exporter.h"
#include "server/metrics/registry.h"
#include "server/metrics/rpc_metrics.h"
#include "server/server_config.h"
#include "server/service.h"

ABSL_FLAG(std::string, address, "127.0.0.1:50051", "host:port to listen on");
ABSL_FLAG(std::string, config, "", "JSON file declaring models (clickd.v1.ServerConfig)");
ABSL_FLAG(bool, default_model, true,
          "serve the embedded model \"default\" (FTRL-Proximal, logistic) unless the config "
          "declares one by that name");
ABSL_FLAG(int, threads, 0,
          "upper bound on gRPC's worker threads (0: gRPC's default, about one per core)");
ABSL_FLAG(uint64_t, max_candidates, 1000, "limit on candidates per Predict");
ABSL_FLAG(uint64_t, max_features_per_example, 4096, "limit on features per example");
ABSL_FLAG(uint64_t, max_examples_per_update, 10000, "limit on examples per Update message");
ABSL_FLAG(int, max_message_bytes, 16 << 20, "limit on a request's size");
ABSL_FLAG(int, shutdown_grace_seconds, 10, "how long SIGTERM waits for in-flight calls");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1",
          "address of the Prometheus /metrics endpoint (0.0.0.0 to expose it, e.g. in a "
          "container)");
ABSL_FLAG(int, metrics_port, 9464, "port of the Prometheus /metrics endpoint; 0 disables it");

namespace clickd {
namespace {

absl::Status LoadModels(ModelRegistry* registry) {
  std::vector<ModelConfig> configs;
  if (const std::string path = absl::GetFlag(FLAGS_config); !path.empty()) {
    auto loaded = LoadServerConfig(path);
    if (!loaded.ok()) return loaded.status();
    configs = *std::move(loaded);
  }
  const bool declared_default = std::any_of(
      configs.begin(), configs.end(), [](const ModelConfig& c) { return c.name == "default"; });
  if (absl::GetFlag(FLAGS_default_model) && !declared_default) {
    configs.push_back(DefaultModelConfig());
  }
  for (const ModelConfig& config : configs) {
    if (auto created = registry->Create(config); !created.ok()) return created.status();
  }
  return absl::OkStatus();
}

// The methods of clickd.v1.Clickd, as the request metrics label them.
std::vector<std::string> ClickdMethods() {
  std::vector<std::string> methods;
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          v1::Clickd::service_full_name());
  for (int i = 0; service != nullptr && i < service->method_count(); ++i) {
    methods.push_back(service->method(i)->name());
  }
  return methods;
}

// Starts the /metrics endpoint unless --metrics_port is 0 (then returns
// null without error).
absl::StatusOr<std::unique_ptr<metrics::HttpExporter>> StartMetrics(
    const metrics::Registry* registry) {
  const int port = absl::GetFlag(FLAGS_metrics_port);
  if (port == 0) return nullptr;
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics_port=", port, " is not a port (1-65535, or 0 to disable)"));
  }
  return metrics::HttpExporter::Start(absl::GetFlag(FLAGS_metrics_address), port, registry);
}

Limits LimitsFromFlags() {
  Limits limits;
  limits.max_candidates = absl::GetFlag(FLAGS_max_candidates);
  limits.max_features_per_example = absl::GetFlag(FLAGS_max_features_per_example);
  limits.max_examples_per_update = absl::GetFlag(FLAGS_max_examples_per_update);
  limits.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  return limits;
}

int Serve() {
  const double start_time =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // Block the shutdown signals before gRPC starts its threads, so that only
  // sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  ModelRegistry registry;
  if (absl::Status s = LoadModels(&registry); !s.ok()) {
    std::cerr << "clickd: " << s.message() << "\n";
    return 2;
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  // Set once the server has started; RPC threads may call update_health
  // before that, hence the atomic.
  std::atomic<grpc::HealthCheckServiceInterface*> health{nullptr};
  // Serialized so that a create and a delete racing cannot leave the status
  // of the one that read the model count first.
  Mutex health_mu;
  auto update_health = [&registry, &health, &health_mu] {
    MutexLock lock(&health_mu);
    if (auto* h = health.load()) h->SetServingStatus(registry.size() > 0);
  };
  // Declared after the model registry, which its callbacks read: the
  // exporter stops before either goes away.
  metrics::Registry metrics_registry;
  metrics::RegisterProcessMetrics(&metrics_registry, start_time);
  metrics::RegisterModelMetrics(&metrics_registry, &registry);
  metrics::RpcMetrics rpc_metrics(&metrics_registry, ClickdMethods());
  auto exporter = StartMetrics(&metrics_registry);
  if (!exporter.ok()) {
    std::cerr << "clickd: " << exporter.status().message() << "\n";
    return 1;
  }
  if (*exporter != nullptr) {
    std::cout << "clickd: metrics on http://" << absl::GetFlag(FLAGS_metrics_address) << ":"
              << (*exporter)->port() << "/metrics" << std::endl;
  }

  const Limits limits = LimitsFromFlags();
  ClickdService service(&registry, limits, update_health, &rpc_metrics);

  grpc::ServerBuilder builder;
  int port = 0;
  // Without this, gRPC sets SO_REUSEPORT and a second clickd on a busy port
  // would start and split the connections with the first.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(absl::GetFlag(FLAGS_address), grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(limits.max_message_bytes);
  if (const int threads = absl::GetFlag(FLAGS_threads); threads > 0) {
    grpc::ResourceQuota quota("clickd");
    quota.SetMaxThreads(threads);
    builder.SetResourceQuota(quota);
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::cerr << "clickd: cannot listen on " << absl::GetFlag(FLAGS_address) << "\n";
    return 1;
  }
  health.store(server->GetHealthCheckService());
  update_health();
  std::cout << "clickd: serving " << registry.size() << " model(s) on "
            << absl::GetFlag(FLAGS_address) << " (port " << port << ")" << std::endl;

  int received = 0;
  sigwait(&signals, &received);
  std::cout << "clickd: signal " << received << ", draining" << std::endl;
  server->GetHealthCheckService()->SetServingStatus(false);
  const auto grace = std::chrono::seconds(absl::GetFlag(FLAGS_shutdown_grace_seconds));
  server->Shutdown(std::chrono::system_clock::now() + grace);
  server->Wait();
  if (*exporter != nullptr) (*exporter)->Stop();
  std::cout << "clickd: stopped" << std::endl;
  return 0;
}

}  // namespace
}  // namespace clickd

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "clickd [--address=HOST:PORT] [--config=FILE] [--metrics_port=PORT] [flags]");
  absl::ParseCommandLine(argc, argv);
  return clickd::Serve();
}
