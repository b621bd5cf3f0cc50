// SnapshotStore: replica snapshots (replication/replica_snapshot.h) published
// to a JetStream stream, so that a replica with an empty volume, or one whose
// local bundle the log stream has been purged past, can bootstrap.
//
// A published snapshot is its bytes as 256 KiB chunk messages on
// <subject_prefix>.chunk, then one manifest message on
// <subject_prefix>.manifest. The manifest is published last, so a reader
// never sees a manifest whose chunks were not all stored. Chunks of
// snapshots published at the same time by different replicas may
// interleave in the stream, so the manifest lists the stream sequence of
// every chunk rather than assuming they are consecutive.
//
// Manifest (little-endian, core/base/coding.h):
//
//   manifest := "CLKDMAN1" version:fixed32 sequence:fixed64 total_bytes:fixed64
//               chunk_count:fixed32 first_chunk_stream_sequence:fixed64
//               bundle_crc:fixed32 chunk_stream_sequence:fixed64{chunk_count}
//               crc:fixed32
//
// bundle_crc is the masked CRC32C of the whole snapshot, crc the masked
// CRC32C of every manifest byte before it. Every chunk but the last holds
// exactly kSnapshotChunkBytes bytes.
//
// Message ids (JetStream deduplicates a retried publish within the stream's
// duplicate window): "snap-<sequence>-<bundle crc, 8 hex>-<chunk>" and
// "...-manifest". The CRC in the id keeps two different bundles at the same
// sequence from being taken for one another.
//
// Thread safety: safe for concurrent use (all members are set once by Open;
// a nats.c JetStream context is thread-safe). Two replicas trimming at once
// may both purge; a publish whose chunks interleave with an older kept
// snapshot's can lose chunks to another replica's trim, which FetchNewest
// then reports and skips.
#ifndef CLICKD_REPLICATION_SNAPSHOT_STORE_H_
#define CLICKD_REPLICATION_SNAPSHOT_STORE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nats/nats.h"

namespace clickd {

inline constexpr size_t kSnapshotChunkBytes = 256 * 1024;

class SnapshotStore {
 public:
  // Uses stream `stream`, creating it if missing (file storage, `replicas`
  // replicas, subjects <subject_prefix>.chunk and <subject_prefix>.manifest,
  // messages up to a chunk plus headroom for headers); an existing stream is
  // used as it is. `js` is a connected nats.c JetStream context owned by the
  // caller, which must outlive the store. `timeout` bounds each JetStream
  // request (a publish's ack, a message get, a purge). With
  // `create_if_missing` false, a missing stream is NotFound instead.
  static absl::StatusOr<std::unique_ptr<SnapshotStore>> Open(jsCtx* js, std::string stream,
                                                             std::string subject_prefix,
                                                             int replicas,
                                                             std::chrono::milliseconds timeout,
                                                             bool create_if_missing = true);

  // Publishes `bytes` (an encoded replica snapshot at `sequence`) as chunks
  // and then its manifest, and keeps only the newest `keep` (>= 1) published
  // snapshots, by sequence: older chunks are purged by subject below the
  // kept snapshots' first chunk, older manifests removed. Unavailable naming
  // NATS if JetStream does not acknowledge.
  absl::Status Publish(uint64_t sequence, std::string_view bytes, int keep = 2);

  struct Published {
    uint64_t sequence = 0;
    uint64_t bytes = 0;
  };
  // The kept published snapshots' manifests, newest first, without
  // downloading chunks. A manifest that does not decode is left out
  // (FetchNewest reports it).
  absl::StatusOr<std::vector<Published>> List();

  // Downloads the newest published snapshot whose chunks are all there and
  // match its manifest (sizes, CRC), trying older ones in turn and adding a
  // message for each rejected one to `rejected` (may be null); nullopt if
  // none is published or none is whole. Returns (sequence, bytes) without
  // decoding the bundle. Unavailable if NATS does not answer.
  absl::StatusOr<std::optional<std::pair<uint64_t, std::string>>> FetchNewest(
      std::vector<std::string>* rejected);

  const std::string& stream() const { return stream_; }

  // One decoded manifest (public for the implementation's helpers and tests).
  struct Manifest {
    uint64_t sequence = 0;
    uint64_t total_bytes = 0;
    uint32_t bundle_crc = 0;  // masked CRC32C of the whole snapshot
    std::vector<uint64_t> chunk_stream_sequences;
    uint64_t stream_sequence = 0;  // of the manifest message itself
  };

 private:
  SnapshotStore(jsCtx* js, std::string stream, std::string subject_prefix,
                std::chrono::milliseconds timeout);

  struct Manifests {
    std::vector<Manifest> manifests;  // newest first: sequence, then stream sequence
    std::vector<std::string> rejected;
  };
  absl::StatusOr<Manifests> ReadManifests();
  absl::StatusOr<std::string> Download(const Manifest& manifest);
  absl::Status Trim(int keep);

  jsCtx* const js_;
  const std::string stream_;
  const std::string chunk_subject_;
  const std::string manifest_subject_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace clickd

#endif  // CLICKD_REPLICATION_SNAPSHOT_STORE_H_
