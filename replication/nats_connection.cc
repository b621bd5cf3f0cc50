#include "replication/nats_connection.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace clickd {
namespace {

// Every natsStatus that means "no server answered in time" or "not
// connected": retrying later, or on another replica, can succeed.
bool IsUnavailable(natsStatus status) {
  switch (status) {
    case NATS_TIMEOUT:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_NO_SERVER:
    case NATS_STALE_CONNECTION:
    case NATS_NO_RESPONDERS:
    case NATS_IO_ERROR:
    case NATS_INSUFFICIENT_BUFFER:
    case NATS_NOT_YET_CONNECTED:
      return true;
    default:
      return false;
  }
}

}  // namespace

absl::Status NatsError(natsStatus status, jsErrCode js_error, std::string_view what) {
  // nats.c answers a publish while disconnected (it buffers nothing: see
  // the header) with "Insufficient Buffer": say what it means.
  const char* text = status == NATS_INSUFFICIENT_BUFFER || status == NATS_NOT_YET_CONNECTED
                         ? "not connected to NATS (reconnecting)"
                         : natsStatus_GetText(status);
  std::string message = absl::StrCat("NATS JetStream ", std::string(what), ": ", text);
  if (js_error != 0)
    absl::StrAppend(&message, " (JetStream error ", static_cast<int>(js_error), ")");
  if (IsUnavailable(status)) return absl::UnavailableError(message);
  // A JetStream API error while the cluster elects a leader or lost its
  // quorum is transient too ("JetStream system temporarily unavailable",
  // 10008; "insufficient resources"; no stream leader), as is "no suitable
  // peers for placement" (10005) while a fresh cluster still learns its
  // peers: a stream of R replicas created before all R are known. (On a
  // cluster smaller than R it stays so; the retries then end with this
  // message.) The same codes the snapshot store treats as transient.
  if (status == NATS_ERR && (js_error == 10008 || js_error == 0)) {
    return absl::UnavailableError(message);
  }
  switch (js_error) {
    case JSClusterNotAvailErr:
    case JSClusterNoPeersErr:
    case JSStreamOfflineErr:
    case JSClusterNotLeaderErr:
      return absl::UnavailableError(message);
    default:
      break;
  }
  return absl::InternalError(message);
}

absl::StatusOr<std::unique_ptr<NatsConnection>> NatsConnection::Connect(
    const NatsConnectionOptions& options) {
  std::unique_ptr<NatsConnection> self(new NatsConnection(options.timeout));
  auto check = [](natsStatus s, std::string_view what) {
    return s == NATS_OK ? absl::OkStatus() : NatsError(s, what);
  };
  if (auto s = check(natsOptions_Create(&self->options_), "options"); !s.ok()) return s;
  natsOptions* o = self->options_;
  std::vector<std::string> urls = absl::StrSplit(options.urls, ',', absl::SkipWhitespace());
  std::vector<const char*> url_pointers;
  for (const std::string& url : urls) url_pointers.push_back(url.c_str());
  if (auto s = check(
          natsOptions_SetServers(o, url_pointers.data(), static_cast<int>(url_pointers.size())),
          "--nats_url");
      !s.ok() || urls.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--nats_url=", options.urls, " is not a list of NATS URLs: ", s.message()));
  }
  if (!options.creds_file.empty()) {
    if (auto s =
            check(natsOptions_SetUserCredentialsFromFiles(o, options.creds_file.c_str(), nullptr),
                  "--nats_creds");
        !s.ok()) {
      return s;
    }
  }
  natsOptions_SetName(o, options.name.c_str());
  natsOptions_SetTimeout(o, options.timeout.count());
  natsOptions_SetIgnoreDiscoveredServers(o, !options.use_discovered_servers);
  natsOptions_SetMaxReconnect(o, -1);  // forever
  natsOptions_SetReconnectWait(o, 250);
  // Nothing is buffered while disconnected: a publish fails at once.
  natsOptions_SetReconnectBufSize(o, 0);
  // A publish is written to the socket by the thread that makes it, not
  // handed to nats.c's flusher thread: one thread wake less per record
  // (each is a context switch on a small machine).
  natsOptions_SetSendAsap(o, true);
  Callbacks* callbacks = self->callbacks_;
  natsOptions_SetDisconnectedCB(o, &NatsConnection::OnDisconnected, callbacks);
  natsOptions_SetReconnectedCB(o, &NatsConnection::OnConnected, callbacks);
  natsOptions_SetClosedCB(o, &NatsConnection::OnClosed, callbacks);
  natsOptions_SetRetryOnFailedConnect(o, true, &NatsConnection::OnConnected, callbacks);

  natsStatus s = natsConnection_Connect(&self->connection_, o);
  if (s == NATS_OK) {
    callbacks->connected = true;
  } else if (s != NATS_NOT_YET_CONNECTED) {
    return NatsError(s, absl::StrCat("connect to ", options.urls));
  }
  jsOptions js_options;
  jsOptions_Init(&js_options);
  js_options.Wait = options.timeout.count();
  if (auto st =
          check(natsConnection_JetStream(&self->js_, self->connection_, &js_options), "context");
      !st.ok()) {
    return st;
  }
  return self;
}

NatsConnection::~NatsConnection() {
  if (js_ != nullptr) jsCtx_Destroy(js_);
  bool closed = connection_ == nullptr;
  if (connection_ != nullptr) {
    natsConnection_Close(connection_);
    MutexLock lock(&callbacks_->mu);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!callbacks_->closed && std::chrono::steady_clock::now() < deadline) {
      callbacks_->closed_cv.WaitFor(&callbacks_->mu, deadline - std::chrono::steady_clock::now());
    }
    closed = callbacks_->closed;
  }
  if (connection_ != nullptr) natsConnection_Destroy(connection_);
  if (options_ != nullptr) natsOptions_Destroy(options_);
  // A callback may still come if the closed one did not: keep what it
  // touches (a few bytes, once per process at most).
  if (closed) delete callbacks_;
}

int64_t NatsConnection::max_payload() const { return natsConnection_GetMaxPayload(connection_); }

void NatsConnection::OnConnected(natsConnection*, void* callbacks) {
  static_cast<Callbacks*>(callbacks)->connected.store(true, std::memory_order_relaxed);
}

void NatsConnection::OnDisconnected(natsConnection*, void* callbacks) {
  static_cast<Callbacks*>(callbacks)->connected.store(false, std::memory_order_relaxed);
}

void NatsConnection::OnClosed(natsConnection*, void* callbacks) {
  auto* c = static_cast<Callbacks*>(callbacks);
  c->connected.store(false, std::memory_order_relaxed);
  MutexLock lock(&c->mu);
  c->closed = true;
  c->closed_cv.SignalAll();
}

}  // namespace clickd
