// EmbeddedReplica: a read-only replica inside the caller's process, so that
// Predict costs no RPC (docs/embedded.md).
//
// It joins a replicated deployment (--replication=jetstream) as a follower:
// it restores every model from the newest published snapshot, then applies
// the JetStream log with the same code a clickd replica runs
// (replication/replica.h, read_only), and answers Predict on the caller's
// thread with the same code the server answers it with
// (server/predict_scoring.h). At the same applied sequence its models are
// the replicas' bit for bit, so are its margins and state digests. It never
// publishes: no records, no checkpoints, no snapshots, no purges; Updates go
// to a clickd replica.
//
//   auto replica = EmbeddedReplica::Open({.nats_url = "nats://10.0.0.1:4222"});
//   v1::PredictResponse response;
//   absl::Status s = (*replica)->Predict(request, &response);
//
// If the log is purged past what it applied (it was stopped or cut off for
// longer than the log's retention), it restores again from the newest
// published snapshot in the background and swaps the new state in; Predict
// keeps answering from the old state meanwhile.
//
// Thread safety: safe for concurrent use. Predict runs on the calling
// thread; applying runs on the replica's own threads.
#ifndef CLICKD_EMBEDDED_EMBEDDED_REPLICA_H_
#define CLICKD_EMBEDDED_EMBEDDED_REPLICA_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clickd/v1/clickd.pb.h"
#include "server/limits.h"

namespace prometheus {
class Collectable;
struct MetricFamily;
}  // namespace prometheus

namespace clickd {

struct EmbeddedReplicaOptions {
  // Comma-separated NATS server URLs of the deployment.
  std::string nats_url;
  // A NATS credentials file (JWT and NKey seed); empty: none.
  std::string nats_creds;
  // Whether to move to NATS servers the cluster announces besides
  // nats_url (NATS's default); false pins the connection to nats_url.
  bool use_discovered_servers = true;
  // The deployment's --nats_stream: the log is <prefix>_LOG.
  std::string stream_prefix = "CLICKD";
  // In NATS's connection list and in log lines.
  std::string name = "clickd-embedded";
  // Each JetStream request's bound.
  std::chrono::milliseconds nats_timeout{2000};
  // How long Open retries while NATS is unavailable, and then applies the
  // log before returning (it returns anyway after, and catches up while
  // serving).
  std::chrono::milliseconds catch_up_timeout{60000};
  // How long a Predict with min_model_version waits for it.
  std::chrono::milliseconds max_version_wait{1000};
  // Predict's bounds, as clickd's flags set them (server/limits.h).
  Limits limits;
};

struct EmbeddedReplicaStats {
  uint64_t applied_version = 0;  // the stream sequence applied
  uint64_t stream_sequence = 0;  // the newest one known to exist
  double lag_seconds = 0;
  bool nats_connected = false;
  uint64_t models = 0;
  uint64_t bootstraps = 0;  // restores from a published snapshot, the first included
  std::string broken;       // why applying stopped, until the next bootstrap ("" if not)
};

class EmbeddedReplica {
 public:
  // Connects, restores from the newest published snapshot and applies the
  // log (within catch_up_timeout). NotFound if the deployment's log does
  // not exist yet; Unavailable if NATS did not answer in time.
  static absl::StatusOr<std::unique_ptr<EmbeddedReplica>> Open(EmbeddedReplicaOptions options);
  // Stops applying and disconnects.
  ~EmbeddedReplica();

  EmbeddedReplica(const EmbeddedReplica&) = delete;
  EmbeddedReplica& operator=(const EmbeddedReplica&) = delete;

  // Scores `request` as clickd's Predict would (every wire form, variants,
  // calibration, explanations) with the models as applied here; the
  // response's model_version is this replica's applied sequence. Errors as
  // clickd's, with the field and the limit; log_impressions is refused
  // (FailedPrecondition: impressions are logged through a server).
  absl::Status Predict(const v1::PredictRequest& request, v1::PredictResponse* response);

  // The model's state digest (16 hex digits), as clickd's GetModel with
  // state_digest reports it; NotFound for an unknown model.
  absl::StatusOr<std::string> StateDigest(const std::string& model);

  // The stream sequence applied here: every Predict answered now reflects
  // every record up to it.
  uint64_t applied_version() const;
  // Waits until applied_version() >= version; DeadlineExceeded naming both
  // if it does not get there within `timeout`.
  absl::Status WaitForVersion(uint64_t version, std::chrono::milliseconds timeout);

  EmbeddedReplicaStats stats() const;

  // --- Metrics (docs/embedded.md#metrics) ---
  // The replica's Prometheus metrics (clickd_embedded_*), computed now
  // from what it holds: nothing is added to Predict but a per-thread count.
  std::vector<prometheus::MetricFamily> CollectMetrics() const;
  // The same in Prometheus' text exposition format 0.0.4.
  std::string MetricsText() const;
  // The same as a prometheus-cpp Collectable for the host's exposer:
  //   exposer.RegisterCollectable(collectable);  // keep `collectable`
  // It may outlive the replica: once the replica is destroyed (which
  // waits for a Collect in progress) it collects nothing. Each call
  // returns a new one; they all follow this replica.
  std::shared_ptr<prometheus::Collectable> MetricsCollectable();

 private:
  struct State;
  struct MetricsLink;
  explicit EmbeddedReplica(std::unique_ptr<State> state);
  // Predict, uncounted (Predict counts its outcome for the metrics).
  absl::Status PredictUncounted(const v1::PredictRequest& request, v1::PredictResponse* response);
  // Makes every MetricsCollectable collect nothing from now on.
  void DetachMetrics();
  std::unique_ptr<State> state_;
};

}  // namespace clickd

#endif  // CLICKD_EMBEDDED_EMBEDDED_REPLICA_H_
