#include "tests/nats_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tests/child_process.h"

// The process handling below follows tests/server_process.cc, which starts
// clickd; it is not shared because that library links gRPC and builds clickd.
namespace clickd::testing {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;
using std::chrono::milliseconds;

constexpr char kClusterName[] = "clickd-test";
constexpr char kDefaultBinary[] = "/usr/local/bin/nats-server";
// The endpoint that tells each node's view of the meta group and of the
// streams it hosts (cluster.leader, cluster.replicas).
constexpr char kJszPath[] = "/jsz?accounts=true&streams=true";
// How often the waits poll.
constexpr milliseconds kPollInterval(50);
// How many times Start() picks new ports when a node lost the race for one.
constexpr int kPortAttempts = 3;

std::string NodeName(int node) { return absl::StrCat("n", node); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void AppendToFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::app);
  out << text;
}

// `count` ports of 127.0.0.1 that were free a moment ago, all different
// (every socket stays bound until all are chosen). The caller must cope with
// losing a race for them.
absl::StatusOr<std::vector<int>> FindFreePorts(int count) {
  std::vector<int> fds;
  std::vector<int> ports;
  absl::Status status;
  for (int i = 0; i < count && status.ok(); ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      status = absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
      break;
    }
    fds.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      status = absl::InternalError(absl::StrCat("bind 127.0.0.1:0: ", std::strerror(errno)));
      break;
    }
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) close(fd);
  if (!status.ok()) return status;
  return ports;
}

// True if something accepts TCP connections on 127.0.0.1:`port`.
bool Listening(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool connected = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return connected;
}

// GETs `path` from the monitoring port and parses the body as JSON.
absl::StatusOr<Json> GetJson(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(1, 0);
  client.set_read_timeout(2, 0);
  const std::string url = absl::StrCat("http://127.0.0.1:", port, path);
  const httplib::Result result = client.Get(path);
  if (!result) {
    return absl::UnavailableError(
        absl::StrCat("GET ", url, ": ", httplib::to_string(result.error())));
  }
  Json json = Json::parse(result->body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InternalError(absl::StrCat("GET ", url, ": not JSON: ", result->body));
  }
  if (result->status != 200) {
    return absl::UnavailableError(
        absl::StrCat("GET ", url, ": HTTP ", result->status, ": ", result->body));
  }
  return json;
}

// The member `key` of `object`, or null if `object` is no object or has none.
const Json* Member(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// The string member `key` of `object`, or "" if it has none.
std::string StringMember(const Json& object, const char* key) {
  const Json* member = Member(object, key);
  return member != nullptr && member->is_string() ? member->get_ref<const std::string&>() : "";
}

// The element of array member `key` of `object` whose "name" is `name`.
const Json* Named(const Json& object, const char* key, const std::string& name) {
  const Json* array = Member(object, key);
  if (array == nullptr || !array->is_array()) return nullptr;
  for (const Json& element : *array) {
    if (StringMember(element, "name") == name) return &element;
  }
  return nullptr;
}

// One node's view of a RAFT group: whom it names leader, and how many
// members the group has (0: unknown).
struct GroupView {
  int node = 0;
  std::string leader;
  int group_size = 0;
};

// The node whose own view names itself leader, believed only when a
// majority of the group's members among `views` name it too.
absl::StatusOr<int> AgreedLeader(const std::vector<GroupView>& views, const std::string& group) {
  std::vector<std::string> seen;
  for (const GroupView& self : views) {
    seen.push_back(absl::StrCat(NodeName(self.node), " names \"", self.leader, "\""));
    if (self.leader != NodeName(self.node)) continue;
    int agree = 0;
    for (const GroupView& other : views) agree += other.leader == self.leader ? 1 : 0;
    const int quorum = std::max(self.group_size, 1) / 2 + 1;
    if (agree >= quorum) return self.node;
  }
  return absl::UnavailableError(
      absl::StrCat("no agreed leader of ", group, " (", absl::StrJoin(seen, ", "), ")"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<NatsCluster>> NatsCluster::Start(
    const std::string& dir, int nodes, std::chrono::seconds ready_timeout) {
  if (nodes < 1) return absl::InvalidArgumentError(absl::StrCat("nodes = ", nodes));
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return absl::InternalError(absl::StrCat("mkdir ", dir, ": ", error.message()));
  const char* env_binary = std::getenv("NATS_SERVER");
  const std::string binary =
      env_binary != nullptr && *env_binary != '\0' ? env_binary : kDefaultBinary;
  const auto deadline = Clock::now() + ready_timeout;

  absl::Status status;
  for (int attempt = 1; attempt <= kPortAttempts; ++attempt) {
    auto free_ports = FindFreePorts(3 * nodes);
    if (!free_ports.ok()) return free_ports.status();
    std::vector<Ports> ports(nodes);
    for (int i = 0; i < nodes; ++i) {
      ports[i] = {(*free_ports)[3 * i], (*free_ports)[3 * i + 1], (*free_ports)[3 * i + 2]};
    }
    std::unique_ptr<NatsCluster> cluster(new NatsCluster(dir, binary, std::move(ports)));
    std::vector<int> all(nodes);
    for (int i = 0; i < nodes; ++i) {
      all[i] = i;
      if (absl::Status written = cluster->WriteConfig(i); !written.ok()) return written;
    }
    const auto left = std::chrono::ceil<std::chrono::seconds>(deadline - Clock::now());
    {
      MutexLock lock(&cluster->mu_);
      status = cluster->Launch(all, left);
    }
    if (status.ok()) status = cluster->WaitReady(left);
    if (status.ok()) return cluster;
    // Another process took one of our ports between FindFreePorts() and the
    // node binding it: try new ones. (The destructor kills the others.)
    if (!absl::StrContains(status.message(), "address already in use")) return status;
  }
  return status;
}

NatsCluster::NatsCluster(std::string dir, std::string binary, std::vector<Ports> ports)
    : dir_(std::move(dir)),
      binary_(std::move(binary)),
      ports_(std::move(ports)),
      pids_(ports_.size(), -1) {}

NatsCluster::~NatsCluster() {
  MutexLock lock(&mu_);
  std::vector<int> all(ports_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  Terminate(all, SIGKILL, std::chrono::seconds(0));
}

std::string NatsCluster::Url(int node) const {
  return absl::StrCat("nats://127.0.0.1:", ports_[node].client);
}

std::string NatsCluster::Urls() const {
  std::vector<std::string> urls;
  for (int i = 0; i < size(); ++i) urls.push_back(Url(i));
  return absl::StrJoin(urls, ",");
}

pid_t NatsCluster::pid(int node) const {
  ReaderMutexLock lock(&mu_);
  return pids_[node];
}

std::string NatsCluster::ConfigPath(int node) const {
  return absl::StrCat(dir_, "/", NodeName(node), ".conf");
}

std::string NatsCluster::LogPath(int node) const {
  return absl::StrCat(dir_, "/", NodeName(node), ".log");
}

// What docs/replication.md asks of production: every JetStream write
// synced before it is acknowledged. $NATS_SYNC_INTERVAL overrides it ("":
// the server's default), for comparing with servers that lack it.
static std::string SyncSetting() {
  const char* value = std::getenv("NATS_SYNC_INTERVAL");
  const std::string sync = value == nullptr ? "always" : value;
  return sync.empty() ? "" : absl::StrCat("  sync_interval: ", sync, "\n");
}

absl::Status NatsCluster::WriteConfig(int node) const {
  const Ports& own = ports_[node];
  std::string config = absl::StrCat("server_name: ", NodeName(node), "\n",                 //
                                    "listen: 127.0.0.1:", own.client, "\n",                //
                                    "http: 127.0.0.1:", own.monitoring, "\n",              //
                                    "max_payload: 8MB\n",                                  //
                                    "jetstream {\n",                                       //
                                    "  store_dir: \"", dir_, "/", NodeName(node), "\"\n",  //
                                    "  max_file_store: 1G\n",                              //
                                    "  max_memory_store: 64M\n",                           //
                                    SyncSetting(),                                         //
                                    "}\n");
  // A single node runs JetStream unclustered: a cluster of one would never
  // elect a meta leader.
  if (size() > 1) {
    std::vector<std::string> routes;
    for (int i = 0; i < size(); ++i) {
      if (i != node) routes.push_back(absl::StrCat("nats-route://127.0.0.1:", ports_[i].cluster));
    }
    absl::StrAppend(&config, "cluster {\n", "  name: \"", kClusterName, "\"\n",
                    "  listen: 127.0.0.1:", own.cluster, "\n", "  routes: [\n    ",
                    absl::StrJoin(routes, "\n    "), "\n  ]\n", "}\n");
  }
  std::ofstream out(ConfigPath(node), std::ios::trunc);
  out << config;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", ConfigPath(node)));
  return absl::OkStatus();
}

absl::Status NatsCluster::Spawn(int node) {
  const std::vector<std::string> argv = {binary_, "-c", ConfigPath(node)};
  const std::string log_path = LogPath(node);
  AppendToFile(log_path, absl::StrCat("--- NatsCluster: starting ", NodeName(node), ": ",
                                      absl::StrJoin(argv, " "), "\n"));
  auto pid = testing::Spawn(argv, {.stdout_path = log_path, .append = true});
  if (!pid.ok()) return pid.status();
  pids_[node] = *pid;
  return absl::OkStatus();
}

bool NatsCluster::Poll(int node) {
  if (pids_[node] <= 0) return false;
  std::optional<ExitStatus> status = Reap(pids_[node]);
  if (!status.has_value()) return true;
  NoteEnded(node, *status);
  return false;
}

void NatsCluster::NoteEnded(int node, const ExitStatus& status) {
  AppendToFile(LogPath(node), absl::StrCat("--- NatsCluster: ", NodeName(node), " (pid ",
                                           pids_[node], ") ended: ", status.ToString(), "\n"));
  pids_[node] = -1;
}

std::vector<int> NatsCluster::Running() {
  MutexLock lock(&mu_);
  std::vector<int> running;
  for (int i = 0; i < size(); ++i) {
    if (Poll(i)) running.push_back(i);
  }
  return running;
}

void NatsCluster::Terminate(const std::vector<int>& nodes, int signal, std::chrono::seconds grace) {
  for (int node : nodes) {
    if (Poll(node)) kill(pids_[node], signal);
  }
  const auto deadline = Clock::now() + grace;
  for (int node : nodes) {
    while (Poll(node) && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(5));
    if (pids_[node] <= 0) continue;
    if (signal != SIGKILL) {
      AppendToFile(LogPath(node),
                   absl::StrCat("--- NatsCluster: ", NodeName(node), " still running ",
                                grace.count(), " s after signal ", signal, ": SIGKILL\n"));
    }
    NoteEnded(node, WaitOrKill(pids_[node], milliseconds(0)));
  }
}

absl::Status NatsCluster::Launch(const std::vector<int>& nodes, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (int node : nodes) {
    if (Poll(node)) continue;
    if (absl::Status spawned = Spawn(node); !spawned.ok()) return spawned;
  }
  // Up: the node accepts clients (it opens the client port once JetStream
  // has recovered its store) and its monitoring port says it is ours.
  for (int node : nodes) {
    std::string last_error = "not listening";
    while (true) {
      if (!Poll(node)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "nats-server ", NodeName(node), " ended before it was up; ", LogTails({node})));
      }
      if (Listening(ports_[node].client)) {
        auto varz = GetJson(ports_[node].monitoring, "/varz");
        if (varz.ok() && StringMember(*varz, "server_name") == NodeName(node)) break;
        last_error = varz.ok()
                         ? absl::StrCat("/varz names \"", StringMember(*varz, "server_name"), "\"")
                         : varz.status().ToString();
      }
      if (Clock::now() >= deadline) {
        return absl::DeadlineExceededError(absl::StrCat("nats-server ", NodeName(node),
                                                        " not up within ", timeout.count(), " s (",
                                                        last_error, "); ", LogTails({node})));
      }
      std::this_thread::sleep_for(kPollInterval);
    }
  }
  return absl::OkStatus();
}

absl::Status NatsCluster::Kill(int node) {
  MutexLock lock(&mu_);
  if (!Poll(node)) return absl::FailedPreconditionError(NodeName(node) + " is not running");
  Terminate({node}, SIGKILL, std::chrono::seconds(0));
  return absl::OkStatus();
}

absl::Status NatsCluster::Stop(int node, std::chrono::seconds grace) {
  MutexLock lock(&mu_);
  if (!Poll(node)) return absl::FailedPreconditionError(NodeName(node) + " is not running");
  Terminate({node}, SIGTERM, grace);
  return absl::OkStatus();
}

absl::Status NatsCluster::Restart(int node, std::chrono::seconds timeout) {
  MutexLock lock(&mu_);
  if (Poll(node)) return absl::FailedPreconditionError(NodeName(node) + " is running");
  return Launch({node}, timeout);
}

absl::Status NatsCluster::StopAll(std::chrono::seconds grace) {
  MutexLock lock(&mu_);
  std::vector<int> all(ports_.size());
  for (int i = 0; i < size(); ++i) all[i] = i;
  Terminate(all, SIGTERM, grace);
  return absl::OkStatus();
}

absl::Status NatsCluster::StartAll(std::chrono::seconds timeout) {
  MutexLock lock(&mu_);
  std::vector<int> all(ports_.size());
  for (int i = 0; i < size(); ++i) all[i] = i;
  return Launch(all, timeout);
}

absl::Status NatsCluster::WaitReady(std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  absl::Status last = absl::UnavailableError("no node is running");
  do {
    const std::vector<int> running = Running();
    bool healthy = !running.empty();
    for (int node : running) {
      auto health = GetJson(ports_[node].monitoring, "/healthz");
      if (!health.ok()) {
        last = absl::UnavailableError(
            absl::StrCat(NodeName(node), " not healthy: ", health.status().message()));
        healthy = false;
        break;
      }
    }
    if (healthy) {
      auto leader = MetaLeader();
      if (leader.ok()) return absl::OkStatus();
      last = leader.status();
    }
    std::this_thread::sleep_for(kPollInterval);
  } while (Clock::now() < deadline);
  std::vector<int> all(ports_.size());
  for (int i = 0; i < size(); ++i) all[i] = i;
  return absl::DeadlineExceededError(absl::StrCat("NATS cluster not ready within ", timeout.count(),
                                                  " s: ", last.message(), "; ", NodeStates(),
                                                  LogTails(all)));
}

std::string NatsCluster::NodeStates() {
  std::string text = "node states:";
  for (int node : Running()) {
    const int port = ports_[node].monitoring;
    auto health = GetJson(port, "/healthz");
    auto jsz = GetJson(port, kJszPath);
    auto routez = GetJson(port, "/routez");
    const Json* meta = jsz.ok() ? Member(*jsz, "meta_cluster") : nullptr;
    const Json* routes = routez.ok() ? Member(*routez, "num_routes") : nullptr;
    absl::StrAppend(&text, "\n  ", NodeName(node), ": healthz ",
                    health.ok() ? "ok" : health.status().message(), "; meta leader \"",
                    meta != nullptr ? StringMember(*meta, "leader") : "?", "\"; routes ",
                    routes != nullptr ? routes->dump() : "?");
  }
  return text + "\n";
}

absl::StatusOr<int> NatsCluster::MetaLeader() {
  std::vector<GroupView> views;
  for (int node : Running()) {
    auto jsz = GetJson(ports_[node].monitoring, kJszPath);
    if (!jsz.ok()) continue;  // Down or going down: the others decide.
    const Json* meta = Member(*jsz, "meta_cluster");
    if (meta == nullptr) {
      // Unclustered JetStream (a single node) has no meta group: the node
      // is its own leader once JetStream is on.
      if (size() == 1 && Member(*jsz, "config") != nullptr) return node;
      continue;
    }
    const Json* cluster_size = Member(*meta, "cluster_size");
    views.push_back({node, StringMember(*meta, "leader"),
                     cluster_size != nullptr && cluster_size->is_number_integer()
                         ? cluster_size->get<int>()
                         : size()});
  }
  return AgreedLeader(views, "the JetStream meta group");
}

absl::StatusOr<int> NatsCluster::StreamLeader(const std::string& stream) {
  std::vector<GroupView> views;
  for (int node : Running()) {
    auto jsz = GetJson(ports_[node].monitoring, kJszPath);
    if (!jsz.ok()) continue;
    const Json* account = Named(*jsz, "account_details", "$G");
    const Json* detail = account != nullptr ? Named(*account, "stream_detail", stream) : nullptr;
    if (detail == nullptr) continue;  // This node does not host the stream.
    const Json* cluster = Member(*detail, "cluster");
    if (cluster == nullptr) {
      if (size() == 1) return node;  // Unclustered: the only node leads.
      continue;
    }
    // Every member lists the others as replicas.
    const Json* replicas = Member(*cluster, "replicas");
    const int group_size =
        1 + (replicas != nullptr && replicas->is_array() ? static_cast<int>(replicas->size()) : 0);
    views.push_back({node, StringMember(*cluster, "leader"), group_size});
  }
  if (views.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no running node hosts stream \"", stream, "\" of account $G"));
  }
  return AgreedLeader(views, absl::StrCat("stream \"", stream, "\""));
}

absl::StatusOr<int> NatsCluster::WaitStreamLeader(const std::string& stream,
                                                  std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    auto leader = StreamLeader(stream);
    if (leader.ok() || Clock::now() >= deadline) return leader;
    std::this_thread::sleep_for(kPollInterval);
  }
}

std::string NatsCluster::LogTail(int node, int lines) const {
  const std::string text = ReadFile(LogPath(node));
  // WaitReady polls /healthz every kPollInterval, and an unhealthy node logs
  // each poll: those lines would push everything telling why out of the tail.
  std::vector<absl::string_view> all;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (!absl::StrContains(line, "Healthcheck failed")) all.push_back(line);
  }
  const size_t first = all.size() > static_cast<size_t>(lines) ? all.size() - lines : 0;
  return absl::StrCat(absl::StrJoin(all.begin() + first, all.end(), "\n"), "\n");
}

std::string NatsCluster::LogTails(const std::vector<int>& nodes) const {
  std::string text;
  for (int node : nodes) {
    absl::StrAppend(&text, "\n--- tail of ", LogPath(node), ":\n", LogTail(node));
  }
  return text;
}

}  // namespace clickd::testing
