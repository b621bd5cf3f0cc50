// Replica snapshots: every model of a replica at one record boundary of the
// replicated stream, as one self-checking byte string, and the local copies
// a replica keeps in <data_dir>/replica.
//
// A restart loads the newest local bundle that decodes whole and resumes the
// stream at its sequence + 1; an empty volume bootstraps from a bundle
// published to JetStream (replication/snapshot_store.h), which carries the
// same bytes.
//
// Format (all integers little-endian, as core/base/coding.h writes them):
//
//   bundle   := magic version sequence [chain] count model{count} crc
//   magic    := "CLKDREP1"                        8 bytes
//   version  := fixed32                           kReplicaSnapshotFormatVersion
//   sequence := fixed64                           last stream record every model contains
//   chain    := known:fixed32 high:fixed64 low:fixed64 ids:string
//               (version 2 on: the log chain at sequence, log_chain.h;
//               known 0 if the writer's chain was unknown; ids: the
//               message ids applied within the duplicate window,
//               applied_ids.h; version 1 bundles have neither and restore
//               with an unknown chain and no ids)
//   count    := fixed32                           number of models
//   model    := created_sequence:fixed64 length:fixed64 snapshot[length]
//               (snapshot: EncodeSnapshot(contents), docs/snapshot_format.md)
//   crc      := fixed32                           masked CRC32C of every byte before it
//
// Models appear in ascending name order, names unique. Every version keeps
// the magic first and the CRC last, so a reader checks both before it reads
// the version: any damaged byte is DataLoss, never a misread version.
//
// Thread safety: pure functions; the local-file functions assume one writer
// per directory (the replication applier).
#ifndef CLICKD_REPLICATION_REPLICA_SNAPSHOT_H_
#define CLICKD_REPLICATION_REPLICA_SNAPSHOT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/persist/env.h"
#include "core/persist/snapshot.h"
#include "replication/log_chain.h"

namespace clickd {

inline constexpr uint32_t kReplicaSnapshotFormatVersion = 2;

struct ReplicaModel {
  uint64_t created_sequence = 0;  // stream sequence of the model's CREATE record
  SnapshotContents contents;      // config (with the name), log_sequence, state
};

struct ReplicaSnapshot {
  uint64_t sequence = 0;             // the last stream record every model here contains
  std::optional<LogDigest> chain;    // the log chain at `sequence` (nullopt: unknown)
  std::string applied_ids;           // AppliedIds::Encode() ("": none)
  std::vector<ReplicaModel> models;  // sorted by name
};

// Encodes the bundle; models are written in name order whatever their order
// in `snapshot`.
std::string EncodeReplicaSnapshot(const ReplicaSnapshot& snapshot);

// Checks everything (magic, CRC, lengths, every model's snapshot, name order,
// sequences no later than the bundle's, no trailing bytes) and returns
// DataLoss naming what is wrong, never a partial result; FailedPrecondition
// for a newer format version.
absl::StatusOr<ReplicaSnapshot> DecodeReplicaSnapshot(std::string_view bytes);

// The file name of the local copy at `sequence`: snapshot-<20 digits>.snap.
std::string LocalReplicaSnapshotName(uint64_t sequence);

// Writes `bytes` (an encoded bundle at `sequence`) to
// dir/LocalReplicaSnapshotName(sequence) atomically, creating `dir`, then
// removes all but the newest `keep` (>= 1) local copies and any temp files
// a crash left behind.
absl::Status WriteLocalReplicaSnapshot(Env* env, const std::string& dir, uint64_t sequence,
                                       std::string_view bytes, int keep);

struct LocalReplicaSnapshot {
  std::string path;  // "" if none loaded
  ReplicaSnapshot snapshot;
  std::vector<std::string> rejected;  // "path: reason" for damaged newer files (left on disk)
};

// Loads the newest local copy that decodes whole and whose sequence matches
// its name, trying older ones in turn; with none (or no `dir`), path is
// empty. A copy in a newer format version stops the search with
// FailedPrecondition (falling back past it would silently downgrade); a
// read error other than damage is returned as is.
absl::StatusOr<LocalReplicaSnapshot> LoadNewestLocalReplicaSnapshot(Env* env,
                                                                    const std::string& dir);

}  // namespace clickd

#endif  // CLICKD_REPLICATION_REPLICA_SNAPSHOT_H_
