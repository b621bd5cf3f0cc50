// The --replication=jetstream wiring of the server: its flags, the NATS
// connection, the replicated log and snapshot streams, the replica and its
// metrics. Keeps main.cc to the order in which things start.
#ifndef CLICKD_SERVER_REPLICATION_SETUP_H_
#define CLICKD_SERVER_REPLICATION_SETUP_H_

#include <chrono>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/serving/registry.h"
#include "replication/jetstream_log.h"
#include "replication/nats_connection.h"
#include "replication/replica.h"
#include "replication/snapshot_store.h"
#include "server/metrics/registry.h"
#include "server/replicated_model_writer.h"

namespace clickd {

// Whether --replication asks for JetStream; InvalidArgument for an unknown
// value, or for JetStream flags without --replication=jetstream.
absl::StatusOr<bool> ReplicationFromFlags();

// Everything a replicated server runs, in the order it must stop (the
// replica first, the connection last).
struct Replication {
  std::unique_ptr<NatsConnection> nats;
  std::unique_ptr<JetStreamLog> log;
  std::unique_ptr<SnapshotStore> snapshots;
  std::unique_ptr<Replica> replica;
  std::unique_ptr<ReplicatedModelWriter> writer;

  ~Replication() {
    writer.reset();
    replica.reset();
    snapshots.reset();
    log.reset();
    nats.reset();
  }
};

// Connects to NATS, opens the streams, restores the models into `registry`
// (memory-only) from the newest snapshot (local under `data_dir`, else
// published), catches up with the stream (bounded by --catch_up_timeout;
// it keeps catching up after that), creates the `configured` models the
// stream does not have yet, and registers the replication metrics.
absl::StatusOr<std::unique_ptr<Replication>> StartReplication(
    ModelRegistry* registry, const std::string& data_dir,
    std::chrono::milliseconds snapshot_interval, const std::vector<ModelConfig>& configured,
    metrics::Registry* metrics);

}  // namespace clickd

#endif  // CLICKD_SERVER_REPLICATION_SETUP_H_
