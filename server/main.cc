// clickd: the online click-prediction server.
//
//   clickd [--address=127.0.0.1:50051] [--config=models.json] [--default_model]
//          [--data_dir=DIR] [--update_log_sync=every_request|interval|none]
//          [--snapshot_interval=5m] [--keep_snapshots=2]
//          [--metrics_address=127.0.0.1] [--metrics_port=9464]
//          [--tls_cert_file=F --tls_key_file=F [--tls_client_ca_file=F]]
//          [--auth_tokens_file=F] [--auth_cert_roles_file=F] [--auth_reload_interval_seconds=60]
//          [--admin_address=HOST:PORT] [--health_address=HOST:PORT] [--reflection]
//          [--replication=jetstream --nats_url=...]
//
// Serves clickd.v1.Clickd, grpc.health.v1 (SERVING once a model is loaded)
// and, with --reflection, server reflection, and Prometheus metrics and a
// status page at http://METRICS_ADDRESS:METRICS_PORT/ (docs/metrics.md).
//
// Security (docs/security.md): TLS or mTLS from PEM files that are re-read
// every --tls_refresh_interval_seconds; per-role authorization from bearer
// tokens and client-certificate names (files re-read when they change); the
// admin methods on their own --admin_address; a plaintext --health_address
// serving only grpc.health.v1 for probes that cannot speak TLS (Kubernetes'
// gRPC probes). Without TLS flags the server listens in plaintext, and says
// so loudly when that is not on a loopback address.
//
// With --data_dir every model is durable (docs/durability.md): restored at
// startup (newest valid snapshot + update-log replay) before the server
// reports SERVING, every update logged before it is acknowledged, snapshots
// written periodically, on demand and at shutdown. SIGTERM or SIGINT drains
// in-flight calls (up to --shutdown_grace_seconds), snapshots the models
// that changed, stops the metrics server and exits 0; calls still running
// at the end of the grace period do not hold the process (it then exits 0
// without shutdown snapshots: the update log has every acknowledged update).
// With --replication=jetstream, the replicated log and replica snapshots
// are the models' durability instead (docs/replication.md).
//
// Model work runs on --worker_threads workers, never on gRPC's threads
// (server/executor.h); requests are checked against their cost in features
// after interactions before any work (server/request_cost.h).
//
// Exit codes: 0 after a clean stop; 2 when a flag, a file or the data it
// names is wrong (a retry fails the same way); 1 when something outside
// failed and a retry may work (a busy port, NATS unreachable).
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server.h>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "core/base/command_line.h"
#include "core/base/mutex.h"
#include "core/serving/registry.h"
#include "google/protobuf/descriptor.h"
#include "kafka/kafka_source.h"
#include "server/auth/auth_files.h"
#include "server/auth/call_auth.h"
#include "server/data_dir_lock.h"
#include "server/descriptors.h"
#include "server/executor.h"
#include "server/grpc_servers.h"
#include "server/impression_expirer.h"
#include "server/load_metrics.h"
#include "server/metrics/clickd_metrics.h"
#include "server/metrics/durability_metrics.h"
#include "server/metrics/http_exporter.h"
#include "server/metrics/registry.h"
#include "server/metrics/rpc_metrics.h"
#include "server/model_startup.h"
#include "server/replication_setup.h"
#include "server/request_cost.h"
#include "server/server_settings.h"
#include "server/service.h"
#include "server/snapshotter.h"
#include "server/status/status_page.h"

namespace clickd {
namespace {

// Why a step of the start failed: the message for stderr and the exit code.
struct StartFailure {
  int exit_code;
  std::string message;
};
using StepResult = std::optional<StartFailure>;

StepResult Failed(int exit_code, const absl::Status& status, std::string prefix = "") {
  return StartFailure{exit_code, absl::StrCat(prefix, status.message())};
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

// One running clickd: everything Serve() builds, as members in the order
// they are built, so that they are destroyed in reverse (the exporter,
// which reads the registry and the replica, before them; the services
// before the executor they post to...).
class ServerProcess {
 public:
  explicit ServerProcess(ServerSettings settings)
      : start_unix_seconds_(
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                .count()),
        settings_(std::move(settings)),
        durability_metrics_(&metrics_registry_),
        data_dir_(settings_.durability.data_dir) {}

  // The steps of a start, in order; each says why it failed.
  StepResult OpenModels();
  StepResult StartMetrics();
  StepResult StartServing();

  // Drains the calls, snapshots what changed and stops. Exits the process
  // at once (0) if calls still run after the grace period.
  void Stop();

 private:
  // Publishes SERVING on every health service while a model is loaded.
  void UpdateHealth();
  ClickdService& AddService(auth::MethodSet methods);

  const double start_unix_seconds_;
  ServerSettings settings_;
  // The metrics registry first: models' update logs report their syncs to
  // it from the moment they are restored.
  metrics::Registry metrics_registry_;
  metrics::DurabilityMetrics durability_metrics_;
  const std::string data_dir_;  // also a replica's, whose models have no journals
  std::unique_ptr<DataDirLock> data_dir_lock_;
  std::optional<ModelRegistry> registry_;
  std::unique_ptr<Replication> replication_;
  std::optional<Snapshotter> snapshotter_;
  // Without replication, what the loop's clock writes through.
  std::optional<LocalModelWriter> local_writer_;
  // The impression-to-click loop's clock: ticks into each model's update
  // log, or (a replica) into the replicated log.
  std::optional<ImpressionExpirer> expirer_;
  // The Kafka sources of the models that have one (kafka/kafka_source.h).
  std::optional<KafkaSources> kafka_sources_;
  std::optional<metrics::RpcMetrics> rpc_metrics_;
  // The executor and the services before the exporter, whose scrapes read
  // their load (RegisterLoadMetrics), so that they outlive it.
  std::optional<Executor> executor_;
  std::vector<std::unique_ptr<ClickdService>> services_;  // main, admin, health
  // Declared before the exporter, which serves it, so that it outlives it.
  std::optional<status::StatusPage> status_page_;
  std::unique_ptr<metrics::HttpExporter> exporter_;  // null: --metrics_port=0
  Servers servers_;
  std::optional<auth::AuthFilesReloader> auth_reloader_;
  // Each server's health service, set once that server has started; calls
  // may update health before that, hence the atomics. health_mu_
  // serializes updates, so that a create and a delete racing cannot leave
  // the status of the one that read the model count first.
  std::array<std::atomic<grpc::HealthCheckServiceInterface*>, 3> health_{};
  Mutex health_mu_;
};

// The data directory locked, the registry with every model restored or
// created, or, with --replication, the replica caught up with the stream.
StepResult ServerProcess::OpenModels() {
  if (!data_dir_.empty()) {
    auto locked = DataDirLock::Acquire(data_dir_);
    if (!locked.ok()) return Failed(2, locked.status());
    data_dir_lock_ = *std::move(locked);
  }
  DurabilityOptions durability = settings_.durability;
  durability.sync_observer = [this](const std::string& model) {
    return durability_metrics_.SyncObserver(model);
  };
  durability.on_snapshot = [this](const ServedModel& model,
                                  const absl::StatusOr<SnapshotReport>& result) {
    if (result.ok()) durability_metrics_.ObserveSnapshot(model.name(), result->seconds);
    LogSnapshot(model, result);
  };
  // A replica's models live in memory: the replicated log and the replica
  // snapshots are their durability, not per-model update logs.
  if (settings_.replicated) durability.data_dir.clear();
  // A stored model over --max_model_fixed_bytes stops the start before
  // it is allocated (docs/limits.md): raise the flag or delete the model.
  registry_.emplace(
      std::move(durability),
      RegistryLimits{.max_models = settings_.max_models,
                     .admit_stored = [limits = settings_.limits](const ModelConfig& config) {
                       return CheckModelFixedBytes(config, limits);
                     }});
  if (settings_.replicated) {
    auto started = StartReplication(&*registry_, data_dir_, settings_.snapshot_interval,
                                    settings_.configured_models, &metrics_registry_);
    if (!started.ok()) {
      const bool retry = started.status().code() == absl::StatusCode::kUnavailable;
      return Failed(retry ? 1 : 2, started.status(), "replication: ");
    }
    replication_ = *std::move(started);
  }
  if (absl::Status s = RecoverModels(&*registry_); !s.ok()) {
    std::string message(s.message());
    if (s.code() == absl::StatusCode::kDataLoss) {
      absl::StrAppend(&message,
                      "\nclickd: if the damage is in an update log, --recover_damaged_log starts "
                      "anyway, keeping the records before it (docs/durability.md)");
    }
    return StartFailure{2, message};
  }
  if (!settings_.replicated) {
    if (absl::Status s = LoadModels(&*registry_, settings_.configured_models, settings_.max_models,
                                    settings_.implicit_default_model);
        !s.ok()) {
      return Failed(2, s);
    }
  }
  snapshotter_.emplace(&*registry_, settings_.snapshot_interval);
  ModelWriter* writer = &local_writer_.emplace(&*registry_);
  if (replication_ != nullptr) writer = replication_->writer.get();
  expirer_.emplace(&*registry_, writer, std::chrono::seconds(1));
  return std::nullopt;
}

// The metric families, and /metrics and the status page unless
// --metrics_port is 0.
StepResult ServerProcess::StartMetrics() {
  metrics::RegisterProcessMetrics(&metrics_registry_, start_unix_seconds_);
  metrics::RegisterModelMetrics(&metrics_registry_, &*registry_);
  metrics::DurabilityMetrics::RegisterModelFamilies(&metrics_registry_, &*registry_);
  rpc_metrics_.emplace(&metrics_registry_, ClickdMethods());
  KafkaSourceOptions kafka;
  kafka.limits = settings_.limits;
  ModelWriter* kafka_writer = &*local_writer_;
  if (replication_ != nullptr) {
    // Every replica consumes in the model's group: each partition is read
    // by one of them, and its batches go through the replicated log.
    kafka_writer = replication_->writer.get();
    kafka.instance = replication_->replica->id();
  }
  kafka_sources_.emplace(&*registry_, kafka_writer, kafka, &metrics_registry_);
  status_page_.emplace(&*registry_);
  const Addresses& at = settings_.addresses;
  if (at.metrics_port == 0) return std::nullopt;
  auto exporter = metrics::HttpExporter::Start(at.metrics_address, at.metrics_port,
                                               &metrics_registry_, status_page_->Pages());
  if (!exporter.ok()) return Failed(1, exporter.status());
  exporter_ = *std::move(exporter);
  std::cout << "clickd: metrics on http://" << at.metrics_address << ":" << exporter_->port()
            << "/metrics" << std::endl;
  if (at.metrics_address == "0.0.0.0" || at.metrics_address == "::" ||
      at.metrics_address == "[::]") {
    // The port has no credentials (docs/security.md): on every interface,
    // only a network policy keeps strangers off it.
    std::cerr << "clickd: warning: --metrics_address=" << at.metrics_address
              << " serves /metrics and the status page without credentials on every interface "
                 "(model names and configs); keep the port private (a NetworkPolicy admitting "
                 "only Prometheus, docs/security.md) or listen on a private address"
              << std::endl;
  }
  status_page_->StartSampling();
  return std::nullopt;
}

ClickdService& ServerProcess::AddService(auth::MethodSet methods) {
  ModelWriter* writer = replication_ != nullptr ? replication_->writer.get() : nullptr;
  services_.push_back(std::make_unique<ClickdService>(
      ClickdServiceOptions{.registry = &*registry_,
                           .limits = settings_.limits,
                           .on_models_changed = [this] { UpdateHealth(); },
                           .rpc_metrics = &*rpc_metrics_,
                           .snapshotter = &*snapshotter_,
                           .executor = &*executor_,
                           .access = auth::AccessControl{settings_.security.auth.get(), methods},
                           .writer = writer}));
  return *services_.back();
}

// The gRPC servers of every address, with their services, and the auth
// files' reloader.
StepResult ServerProcess::StartServing() {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  executor_.emplace(settings_.isolation);
  const Addresses& at = settings_.addresses;
  ClickdService& main =
      AddService(at.admin.empty() ? auth::MethodSet::kAll : auth::MethodSet::kNoAdmin);
  ClickdService& admin = AddService(auth::MethodSet::kAdminOnly);
  // The health address refuses every clickd method; registering the
  // service gives that server the callback queue gRPC requires of a server
  // (the health service alone is added too late for its check).
  ClickdService& refusing = AddService(auth::MethodSet::kNone);
  const ServerLoadReader read_load = NewServerLoadReader(&*executor_, {&main, &admin, &refusing},
                                                         settings_.limits.max_open_streams);
  RegisterLoadMetrics(&metrics_registry_, read_load);
  status_page_->SetLoadReader(read_load);
  status_page_->SetKafkaReader([this] {
    std::vector<std::pair<std::string, status::KafkaStatus>> out;
    for (const auto& [model, stats] : kafka_sources_->Stats()) {
      status::KafkaStatus k;
      k.topic = stats.topic;
      k.partitions = static_cast<int>(stats.partitions.size());
      for (const KafkaPartitionStats& p : stats.partitions) {
        if (p.high_watermark >= 0 && p.next_offset >= 0) {
          k.lag_records += std::max<int64_t>(0, p.high_watermark - p.next_offset);
        }
      }
      out.emplace_back(model, std::move(k));
    }
    return out;
  });
  const Security& security = settings_.security;
  auto servers = StartServers(at, security, settings_.limits, {&main, &admin, &refusing});
  if (!servers.ok()) return Failed(1, servers.status());
  servers_ = *std::move(servers);
  for (size_t i = 0; i < servers_.all.size(); ++i) {
    health_[i].store(servers_.all[i]->GetHealthCheckService());
  }
  UpdateHealth();
  if (security.tls) {
    std::cout << "clickd: TLS" << (security.client_certificates ? " with client certificates" : "")
              << ", files re-read every " << security.tls_refresh_interval_seconds << " s"
              << std::endl;
  }
  if (security.auth != nullptr) {
    const int reload = security.auth_reload_interval_seconds;
    std::cout << "clickd: calls need credentials (--auth_tokens_file, --auth_cert_roles_file"
              << (reload > 0 ? absl::StrCat(", re-read every ", reload, " s") : "") << ")"
              << std::endl;
    if (reload > 0) auth_reloader_.emplace(security.auth.get(), std::chrono::seconds(reload));
  }
  std::cout << "clickd: serving " << registry_->size() << " model(s) on " << at.main << " (port "
            << servers_.port << ")" << std::endl;
  return std::nullopt;
}

void ServerProcess::UpdateHealth() {
  // A deleted model's histogram series go with it.
  durability_metrics_.RemoveDeletedModels(*registry_);
  MutexLock lock(&health_mu_);
  for (auto& service : health_) {
    if (auto* h = service.load()) h->SetServingStatus(registry_->size() > 0);
  }
}

void ServerProcess::Stop() {
  for (auto& s : servers_.all) s->GetHealthCheckService()->SetServingStatus(false);
  if (!DrainAndStop(servers_.all, &*executor_, settings_.shutdown_grace)) {
    // Snapshots would wait for the running learn; the update log already
    // holds every update that was acknowledged (and maybe the running one).
    std::cout << "clickd: " << executor_->running()
              << " call(s) still running after the grace period; exiting without shutdown "
                 "snapshots"
              << std::endl;
    std::cerr.flush();
    std::_Exit(0);
  }
  // Nothing learned after the shutdown snapshots; the object stays for
  // scrapes until the exporter stops.
  kafka_sources_->Stop();
  expirer_.reset();  // no tick after the shutdown snapshots
  if (registry_->durable() && settings_.snapshot_on_shutdown) {
    const int failures = snapshotter_->SnapshotChanged();
    if (failures > 0) {
      // The update log still holds everything: a restart replays it.
      std::cerr << "clickd: " << failures << " shutdown snapshot(s) failed" << std::endl;
    }
  }
  if (replication_ != nullptr && !data_dir_.empty() && settings_.snapshot_on_shutdown) {
    // The stream holds everything; a local snapshot only shortens the next
    // start's catch-up.
    if (auto report = replication_->replica->Snapshot(/*publish=*/false); report.ok()) {
      std::cout << "clickd: replica snapshot at sequence " << report->sequence << std::endl;
    } else {
      std::cerr << "clickd: replica snapshot failed: " << report.status().message() << std::endl;
    }
  }
  if (exporter_ != nullptr) exporter_->Stop();
  replication_.reset();  // after the exporter: its scrapes read the replica
}

int Serve() {
  // Block the shutdown signals before gRPC starts its threads, so that only
  // sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Every flag is checked before anything starts (restoring models may take long).
  auto settings = ServerSettingsFromFlags();
  if (!settings.ok()) {
    std::cerr << "clickd: " << settings.status().message() << "\n";
    return 2;
  }
  ServerProcess process(*std::move(settings));
  for (auto step :
       {&ServerProcess::OpenModels, &ServerProcess::StartMetrics, &ServerProcess::StartServing}) {
    if (StepResult failure = (process.*step)(); failure.has_value()) {
      std::cerr << "clickd: " << failure->message << "\n";
      return failure->exit_code;
    }
  }
  int received = 0;
  sigwait(&signals, &received);
  std::cout << "clickd: signal " << received << ", draining" << std::endl;
  process.Stop();
  std::cout << "clickd: stopped" << std::endl;
  return 0;
}

}  // namespace

// --help. Abseil's own lists only the flags of a file named like the program
// (so "No flags matched" here) and exits 1; this one lists every flag clickd
// defines, with its default, and exits 0. Abseil's own flags (--flagfile,
// --fromenv, ...) stay in --helpfull.
namespace {

// The source root as the compiler named this file ("../../" under Ninja with
// ccache's base_dir, "/src/clickd/" without): every flag of clickd is defined
// in a file under it, none of Abseil's is. Abseil hands out a flag's file name
// with its leading slashes stripped (CommandLineFlag::Filename() is
// normalized), so the root is stripped the same way.
std::string SourceRoot() {
  absl::string_view file = __FILE__;
  if (!absl::ConsumeSuffix(&file, "server/main.cc")) return "";
  const size_t start = file.find_first_not_of('/');
  return start == absl::string_view::npos ? "" : std::string(file.substr(start));
}

bool IsOwnFile(absl::string_view file) { return absl::StartsWith(file, SourceRoot()); }

// Points Abseil's --helpshort and --helppackage at clickd's own files too.
void SetUpUsage() {
  absl::SetProgramUsageMessage(
      "clickd [--address=HOST:PORT] [--config=FILE] [--data_dir=DIR] [--metrics_port=PORT] "
      "[flags]");
  absl::FlagsUsageConfig config;
  config.contains_help_flags = IsOwnFile;
  config.contains_helpshort_flags = IsOwnFile;
  config.contains_helppackage_flags = IsOwnFile;
  absl::SetFlagsUsageConfig(config);
}

// Prints every flag defined in clickd's sources, by file, in Abseil's
// --helpfull format: name, help, default (and the current value if set).
void PrintHelp() {
  std::map<std::string, std::map<std::string, const absl::CommandLineFlag*>> by_file;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (IsOwnFile(flag->Filename())) by_file[flag->Filename()][std::string(name)] = flag;
  }
  std::cout << "usage: " << absl::ProgramUsageMessage() << "\n";
  for (const auto& [file, flags] : by_file) {
    std::cout << "\n  Flags from " << file.substr(SourceRoot().size()) << ":\n";
    // The per-flag printer of Abseil's --helpfull (Abseil 20220623 has no
    // public one), so that both lists read the same.
    for (const auto& [name, flag] : flags) absl::flags_internal::FlagHelp(std::cout, *flag);
  }
  std::cout << "\nAbseil's own flags (--flagfile, --fromenv, --helpfull, ...): clickd "
               "--helpfull\n";
}

}  // namespace
}  // namespace clickd

int main(int argc, char** argv) {
  // Debian's Abseil runs absl::Mutex's lock-order cycle detection (a
  // debugging aid) on every lock gRPC takes: ~5% of a small Predict's
  // server CPU. clickd's own locks are checked by -Wthread-safety and TSan.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  clickd::SetUpUsage();
  const bool help = clickd::TakeHelpFlag(argc, argv);
  absl::ParseCommandLine(argc, argv);
  if (help) {
    clickd::PrintHelp();
    return 0;
  }
  // Before any socket or file opens (server/descriptors.h).
  const absl::StatusOr<uint64_t> open_files = clickd::PrepareDescriptors();
  if (!open_files.ok()) {
    std::cerr << "clickd: " << open_files.status().message() << std::endl;
    return 1;
  }
  std::cout << "clickd: open files limit " << *open_files << std::endl;
  return clickd::Serve();
}
