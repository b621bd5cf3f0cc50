// Divergence detection: replicas compare what they applied, so that copies
// of the replicated log that differ (a NATS node serving other records under
// the same sequences) are caught instead of learned silently.
//
//   * The log chain (log_chain.h): two replicas with equal chains at s
//     applied the same records 1..s.
//   * Checkpoint: what a replica publishes (core NATS, every
//     --replication_checkpoint_interval): its applied sequence, its chain at
//     that sequence and its newest state digest (XXH3-64 over every model's
//     StateDigest, taken at sequences that are multiples of
//     --replication_state_digest_records).
//   * DivergenceMonitor: keeps this replica's recent chain and state digests
//     by sequence, and compares each peer's checkpoint at the same sequence:
//     at once when it already applied it, or when it gets there (one pending
//     checkpoint per peer). A peer's last comparison is its verdict.
//
// Who is diverged: this replica counts itself and the live peers that agree
// with it against the live peers that disagree. In the minority (or a tie)
// it is diverged: it refuses writes and keeps serving reads. A strict
// minority, or its own publish answered at another sequence than its reader
// delivered it (MarkDiverged), latches: only a restart that re-bootstraps
// clears it. A tie does not latch (a third replica's verdict may settle it).
//
// Thread safety: safe for concurrent use (one mutex). The applier calls
// Reset/Applied/StateDigestAt in sequence order.
#ifndef CLICKD_REPLICATION_DIVERGENCE_H_
#define CLICKD_REPLICATION_DIVERGENCE_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "replication/log_chain.h"

namespace clickd {

struct Checkpoint {
  std::string instance;  // unique per process (replica id + start time)
  std::string replica;   // --replica_id
  uint64_t applied_sequence = 0;
  // Neither broken nor diverged: its applied sequence holds back retention.
  bool healthy = true;
  bool chain_known = false;     // false after a restore from a snapshot without a chain
  LogDigest chain;              // at applied_sequence
  uint64_t state_sequence = 0;  // 0: no state digest yet
  uint64_t state_digest = 0;
};

// A self-checking byte string ("CLKDCKP1" ... masked CRC32C).
std::string EncodeCheckpoint(const Checkpoint& checkpoint);
absl::StatusOr<Checkpoint> DecodeCheckpoint(std::string_view bytes);

struct DivergenceReport {
  bool diverged = false;
  std::string reason;      // why (empty when not diverged)
  int peers_agreeing = 0;  // live peers whose last comparison matched
  int peers_disagreeing = 0;
  uint64_t mismatches = 0;   // comparisons that differed, since start
  uint64_t comparisons = 0;  // comparisons made, since start
  // Checkpoints ignored because 64 other live peers were already tracked.
  uint64_t refused_peers = 0;
  // The lowest applied sequence among this replica and its live healthy
  // peers: what retention must keep (0 before anything is known).
  uint64_t min_live_applied = 0;
  std::vector<std::string> disagreeing;  // "replica (instance)" of each
};

class DivergenceMonitor {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    std::string instance;
    // Recent sequences whose chain is kept for comparison.
    size_t chain_history = 16384;
    size_t state_history = 16;
    // A peer not heard from for this long is forgotten.
    std::chrono::milliseconds peer_ttl{15000};
  };
  explicit DivergenceMonitor(Options options);

  // Starts the chain at `sequence` with `chain` (nullopt: unknown, from a
  // snapshot written before chains; such a chain is never compared).
  void Reset(uint64_t sequence, std::optional<LogDigest> chain);
  // Extends the chain with the record at `sequence` (the next one).
  void Applied(uint64_t sequence, std::string_view record);
  // Records the state digest taken right after applying `sequence`.
  void StateDigestAt(uint64_t sequence, uint64_t digest);

  // The chain at the last applied sequence (nullopt if unknown).
  std::optional<LogDigest> chain() const;
  // This replica's checkpoint now.
  Checkpoint Current(const std::string& replica, bool healthy) const;

  // Compares a peer's checkpoint with this replica's history (its own are
  // ignored). `now` is when it arrived.
  void OnPeer(const Checkpoint& peer, Clock::time_point now);
  // Latches the diverged state with `reason`.
  void MarkDiverged(std::string reason);

  DivergenceReport Report(Clock::time_point now) const;

 private:
  enum class Verdict { kUnknown, kAgree, kDisagree };
  struct Peer {
    std::string replica;
    uint64_t applied = 0;
    bool healthy = true;
    Clock::time_point last_seen;
    Verdict verdict = Verdict::kUnknown;
    std::optional<Checkpoint> pending_chain;  // at a sequence not applied here yet
    std::optional<Checkpoint> pending_state;
  };
  struct ChainEntry {
    uint64_t sequence = 0;
    LogDigest chain;
  };

  void ComparePeer(Peer* peer, const Checkpoint& checkpoint) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // nullopt: cannot compare (not kept, or not applied yet).
  std::optional<bool> ChainMatches(const Checkpoint& checkpoint) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // This replica's state digest at `sequence`, if it took one there.
  std::optional<uint64_t> OwnStateDigest(uint64_t sequence) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Judge(Peer* peer, bool matches, const std::string& what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Compares the pending checkpoints that `sequence` makes comparable.
  void ComparePending(uint64_t sequence) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CountVerdicts(Clock::time_point now, int* agree, int* disagree) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable Mutex mu_;
  uint64_t head_ ABSL_GUARDED_BY(mu_) = 0;
  bool chain_known_ ABSL_GUARDED_BY(mu_) = true;
  LogDigest chain_ ABSL_GUARDED_BY(mu_);
  std::vector<ChainEntry> chains_ ABSL_GUARDED_BY(mu_);                     // by sequence % size
  std::vector<std::pair<uint64_t, uint64_t>> states_ ABSL_GUARDED_BY(mu_);  // newest last
  absl::flat_hash_map<std::string, Peer> peers_ ABSL_GUARDED_BY(mu_);       // by instance
  bool latched_ ABSL_GUARDED_BY(mu_) = false;
  std::string latched_reason_ ABSL_GUARDED_BY(mu_);
  std::string last_mismatch_ ABSL_GUARDED_BY(mu_);
  uint64_t mismatches_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t comparisons_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t refused_peers_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace clickd

#endif  // CLICKD_REPLICATION_DIVERGENCE_H_
