// ReplicaStatus: what a replica reports of itself (replica.h), in a header
// of its own so that the server's ModelWriter and status pages can carry
// it without reaching NATS.
#ifndef CLICKD_REPLICATION_REPLICA_STATUS_H_
#define CLICKD_REPLICATION_REPLICA_STATUS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "replication/divergence.h"

namespace clickd {

// A replica's view of replication, for metrics and health.
struct ReplicaStatus {
  uint64_t applied_sequence = 0;
  uint64_t stream_sequence = 0;  // newest sequence known to exist
  double lag_seconds = 0;
  bool nats_connected = false;
  uint64_t published_snapshot_sequence = 0;
  uint64_t rejected_records = 0;
  // Records skipped because their message id was applied within the
  // duplicate window (a server that stored a retry twice).
  uint64_t duplicate_records = 0;
  absl::Status broken;  // why this replica stopped applying (OK if it did not)
  DivergenceReport divergence;
};

}  // namespace clickd

#endif  // CLICKD_REPLICATION_REPLICA_STATUS_H_
