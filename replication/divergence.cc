#include "replication/divergence.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/coding.h"
#include "core/base/crc32c.h"

namespace clickd {
namespace {

constexpr std::string_view kCheckpointMagic = "CLKDCKP1";
constexpr uint32_t kCheckpointVersion = 1;
// Bounds what a checkpoint from the wire may claim to hold.
constexpr size_t kMaxNameBytes = 512;
// Replicas a monitor keeps track of at once (deployments run a handful).
constexpr size_t kMaxPeers = 64;

uint32_t MaskedCrc(std::string_view bytes) {
  return crc32c::Mask(crc32c::Value(bytes.data(), bytes.size()));
}

absl::Status BadCheckpoint(const std::string& what) {
  return absl::DataLossError(absl::StrCat("replication checkpoint is corrupt: ", what));
}

}  // namespace

std::string EncodeCheckpoint(const Checkpoint& c) {
  std::string out(kCheckpointMagic);
  coding::PutFixed32(&out, kCheckpointVersion);
  coding::PutString(&out, c.instance);
  coding::PutString(&out, c.replica);
  coding::PutFixed64(&out, c.applied_sequence);
  coding::PutFixed32(&out, (c.healthy ? 1u : 0u) | (c.chain_known ? 2u : 0u));
  coding::PutFixed64(&out, c.chain.high);
  coding::PutFixed64(&out, c.chain.low);
  coding::PutFixed64(&out, c.state_sequence);
  coding::PutFixed64(&out, c.state_digest);
  coding::PutFixed32(&out, MaskedCrc(out));
  return out;
}

absl::StatusOr<Checkpoint> DecodeCheckpoint(std::string_view bytes) {
  if (bytes.size() < kCheckpointMagic.size() + 8 || !bytes.starts_with(kCheckpointMagic)) {
    return BadCheckpoint("bad magic or truncated");
  }
  const std::string_view body = bytes.substr(0, bytes.size() - 4);
  uint32_t crc = 0;
  coding::Decoder(bytes.substr(body.size())).GetFixed32(&crc);
  if (crc != MaskedCrc(body)) return BadCheckpoint("checksum mismatch");
  coding::Decoder in(body.substr(kCheckpointMagic.size()));
  Checkpoint c;
  uint32_t version = 0, flags = 0;
  if (!in.GetFixed32(&version) || version != kCheckpointVersion) {
    return BadCheckpoint(absl::StrCat("unknown version ", version));
  }
  if (!in.GetString(&c.instance) || !in.GetString(&c.replica) ||
      !in.GetFixed64(&c.applied_sequence) || !in.GetFixed32(&flags) ||
      !in.GetFixed64(&c.chain.high) || !in.GetFixed64(&c.chain.low) ||
      !in.GetFixed64(&c.state_sequence) || !in.GetFixed64(&c.state_digest) ||
      !in.remaining().empty()) {
    return BadCheckpoint("truncated or trailing bytes");
  }
  if (c.instance.empty() || c.instance.size() > kMaxNameBytes || c.replica.size() > kMaxNameBytes) {
    return BadCheckpoint("instance or replica name empty or too long");
  }
  c.healthy = (flags & 1u) != 0;
  c.chain_known = (flags & 2u) != 0;
  return c;
}

DivergenceMonitor::DivergenceMonitor(Options options) : options_(std::move(options)) {
  MutexLock lock(&mu_);
  chains_.resize(std::max<size_t>(1, options_.chain_history));
}

void DivergenceMonitor::Reset(uint64_t sequence, std::optional<LogDigest> chain) {
  MutexLock lock(&mu_);
  head_ = sequence;
  chain_known_ = chain.has_value();
  chain_ = chain.value_or(LogDigest{});
  std::fill(chains_.begin(), chains_.end(), ChainEntry{});
  chains_[sequence % chains_.size()] = ChainEntry{sequence, chain_};
  states_.clear();
}

void DivergenceMonitor::Applied(uint64_t sequence, std::string_view record) {
  MutexLock lock(&mu_);
  if (chain_known_) chain_ = ExtendLogChain(chain_, sequence, record);
  head_ = sequence;
  chains_[sequence % chains_.size()] = ChainEntry{sequence, chain_};
  ComparePending(sequence);
}

void DivergenceMonitor::StateDigestAt(uint64_t sequence, uint64_t digest) {
  MutexLock lock(&mu_);
  states_.emplace_back(sequence, digest);
  if (states_.size() > std::max<size_t>(1, options_.state_history)) states_.erase(states_.begin());
  ComparePending(sequence);
}

std::optional<LogDigest> DivergenceMonitor::chain() const {
  MutexLock lock(&mu_);
  if (!chain_known_) return std::nullopt;
  return chain_;
}

Checkpoint DivergenceMonitor::Current(const std::string& replica, bool healthy) const {
  MutexLock lock(&mu_);
  Checkpoint c;
  c.instance = options_.instance;
  c.replica = replica;
  c.applied_sequence = head_;
  c.healthy = healthy && !latched_;
  c.chain_known = chain_known_;
  c.chain = chain_;
  if (!states_.empty()) {
    c.state_sequence = states_.back().first;
    c.state_digest = states_.back().second;
  }
  return c;
}

std::optional<bool> DivergenceMonitor::ChainMatches(const Checkpoint& c) const {
  if (!c.chain_known || !chain_known_ || c.applied_sequence > head_) return std::nullopt;
  const ChainEntry& entry = chains_[c.applied_sequence % chains_.size()];
  if (entry.sequence != c.applied_sequence) return std::nullopt;  // too old to compare
  return entry.chain == c.chain;
}

std::optional<uint64_t> DivergenceMonitor::OwnStateDigest(uint64_t sequence) const {
  if (sequence == 0) return std::nullopt;
  for (const auto& [at, digest] : states_) {
    if (at == sequence) return digest;
  }
  return std::nullopt;
}

void DivergenceMonitor::OnPeer(const Checkpoint& checkpoint, Clock::time_point now) {
  if (checkpoint.instance == options_.instance) return;
  MutexLock lock(&mu_);
  // Forget peers not heard from within the TTL (restarted replicas come
  // back as new instances), and take no more than kMaxPeers: anyone who may
  // publish on the subject could otherwise grow this map without bound.
  for (auto it = peers_.begin(); it != peers_.end();) {
    if (now - it->second.last_seen > options_.peer_ttl) {
      peers_.erase(it++);
    } else {
      ++it;
    }
  }
  if (!peers_.contains(checkpoint.instance) && peers_.size() >= kMaxPeers) {
    ++refused_peers_;
    return;
  }
  Peer& peer = peers_[checkpoint.instance];
  peer.replica = checkpoint.replica;
  peer.applied = checkpoint.applied_sequence;
  peer.healthy = checkpoint.healthy;
  peer.last_seen = now;
  ComparePeer(&peer, checkpoint);
}

void DivergenceMonitor::ComparePeer(Peer* peer, const Checkpoint& c) {
  if (std::optional<bool> chain = ChainMatches(c); chain.has_value()) {
    Judge(peer, *chain,
          absl::StrCat("log chain at sequence ", c.applied_sequence, ": ", LogDigestHex(c.chain),
                       " on replica ", c.replica, ", ",
                       LogDigestHex(chains_[c.applied_sequence % chains_.size()].chain), " here"));
  } else if (c.chain_known && chain_known_ && c.applied_sequence > head_ &&
             !peer->pending_chain.has_value()) {
    peer->pending_chain = c;
  }
  if (std::optional<uint64_t> mine = OwnStateDigest(c.state_sequence); mine.has_value()) {
    Judge(peer, *mine == c.state_digest,
          absl::StrFormat("state digest at sequence %d: %016x on replica %s, %016x here",
                          c.state_sequence, c.state_digest, c.replica, *mine));
  } else if (c.state_sequence >= head_ && c.state_sequence > 0 &&
             (!peer->pending_state.has_value() || peer->pending_state->state_sequence < head_)) {
    // Not taken here yet (or this replica digests at other sequences: a
    // pending one left behind is replaced).
    peer->pending_state = c;
  }
}

void DivergenceMonitor::ComparePending(uint64_t sequence) {
  for (auto& [instance, peer] : peers_) {
    if (peer.pending_chain.has_value() && peer.pending_chain->applied_sequence <= sequence) {
      Checkpoint c = *std::move(peer.pending_chain);
      peer.pending_chain.reset();
      c.state_sequence = 0;  // the state part is pending_state's
      ComparePeer(&peer, c);
    }
    if (peer.pending_state.has_value() && peer.pending_state->state_sequence <= sequence) {
      Checkpoint c = *std::move(peer.pending_state);
      peer.pending_state.reset();
      c.chain_known = false;  // the chain part is pending_chain's
      ComparePeer(&peer, c);
    }
  }
}

void DivergenceMonitor::Judge(Peer* peer, bool matches, const std::string& what) {
  ++comparisons_;
  if (matches) {
    // A chain once different stays different: a match after a mismatch
    // means the peer re-bootstrapped, which gives it a new instance. Keep
    // the disagreement of this instance.
    if (peer->verdict != Verdict::kDisagree) peer->verdict = Verdict::kAgree;
    return;
  }
  ++mismatches_;
  if (peer->verdict != Verdict::kDisagree) {
    std::cerr << "clickd: replication divergence: " << what << std::endl;
  }
  peer->verdict = Verdict::kDisagree;
  last_mismatch_ = what;
  int agree = 0, disagree = 0;
  CountVerdicts(Clock::now(), &agree, &disagree);
  if (!latched_ && 1 + agree < disagree) {
    latched_ = true;
    latched_reason_ = absl::StrCat(disagree, " replica(s) disagree with this one and ", agree,
                                   " agree; last difference: ", what);
  }
}

void DivergenceMonitor::MarkDiverged(std::string reason) {
  MutexLock lock(&mu_);
  if (latched_) return;
  std::cerr << "clickd: replication divergence: " << reason << std::endl;
  latched_ = true;
  latched_reason_ = std::move(reason);
}

void DivergenceMonitor::CountVerdicts(Clock::time_point now, int* agree, int* disagree) const {
  for (const auto& [instance, peer] : peers_) {
    if (now - peer.last_seen > options_.peer_ttl) continue;
    if (peer.verdict == Verdict::kAgree) ++*agree;
    if (peer.verdict == Verdict::kDisagree) ++*disagree;
  }
}

DivergenceReport DivergenceMonitor::Report(Clock::time_point now) const {
  MutexLock lock(&mu_);
  DivergenceReport out;
  CountVerdicts(now, &out.peers_agreeing, &out.peers_disagreeing);
  out.mismatches = mismatches_;
  out.comparisons = comparisons_;
  out.refused_peers = refused_peers_;
  if (latched_) {
    out.diverged = true;
    out.reason = latched_reason_;
  } else if (out.peers_disagreeing > 0 && 1 + out.peers_agreeing <= out.peers_disagreeing) {
    out.diverged = true;
    out.reason =
        absl::StrCat("as many replicas disagree with this one (", out.peers_disagreeing,
                     ") as agree with it, itself included; last difference: ", last_mismatch_);
  }
  out.min_live_applied = head_;
  for (const auto& [instance, peer] : peers_) {
    if (now - peer.last_seen > options_.peer_ttl) continue;
    if (peer.verdict == Verdict::kDisagree) {
      out.disagreeing.push_back(absl::StrCat(peer.replica, " (", instance, ")"));
    }
    if (peer.healthy) out.min_live_applied = std::min(out.min_live_applied, peer.applied);
  }
  std::sort(out.disagreeing.begin(), out.disagreeing.end());
  return out;
}

}  // namespace clickd
