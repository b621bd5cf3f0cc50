#include "replication/snapshot_store.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "core/base/coding.h"
#include "core/base/crc32c.h"

namespace clickd {
namespace {

constexpr std::string_view kManifestMagic = "CLKDMAN1";
constexpr uint32_t kManifestVersion = 1;
// magic, version, sequence, total bytes, chunk count, first chunk, bundle CRC.
constexpr size_t kManifestHeaderBytes = 8 + 4 + 8 + 8 + 4 + 8 + 4;
// Room for the message headers (Nats-Msg-Id and the like) beside a chunk.
constexpr int32_t kHeaderHeadroom = 64 * 1024;
constexpr int64_t kDuplicateWindowNanos = int64_t{120} * 1000 * 1000 * 1000;
// Manifests read when listing: far more than any `keep`, a bound on the loop.
constexpr int kMaxManifests = 10000;

// Converts a nats.c result to a Status whose message starts "NATS JetStream:
// <what>": Unavailable when NATS or the stream's quorum did not answer,
// NotFound for a missing stream or message, Internal otherwise.
absl::Status FromNats(natsStatus s, jsErrCode code, const std::string& what) {
  if (s == NATS_OK) return absl::OkStatus();
  const char* last = nats_GetLastError(nullptr);
  std::string message =
      absl::StrCat("NATS JetStream: ", what, ": ",
                   last != nullptr && *last != '\0' ? last : natsStatus_GetText(s));
  if (code != 0) absl::StrAppend(&message, " (JetStream error ", static_cast<int>(code), ")");
  if (code == JSStreamNotFoundErr || code == JSNoMessageFoundErr || s == NATS_NOT_FOUND) {
    return absl::NotFoundError(message);
  }
  switch (s) {
    case NATS_TIMEOUT:
    case NATS_IO_ERROR:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_NO_SERVER:
    case NATS_STALE_CONNECTION:
    case NATS_NOT_YET_CONNECTED:
    case NATS_NO_RESPONDERS:
    case NATS_DRAINING:
    case NATS_MISSED_HEARTBEAT:
      return absl::UnavailableError(message);
    default:
      break;
  }
  switch (code) {
    case JSClusterNotAvailErr:
    case JSClusterNoPeersErr:
    case JSStreamOfflineErr:
    case JSClusterNotLeaderErr:
    case JSNotEnabledErr:
    case JSNotEnabledForAccountErr:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

uint32_t MaskedCrc(std::string_view bytes) {
  return crc32c::Mask(crc32c::Value(bytes.data(), bytes.size()));
}

std::string_view DataOf(natsMsg* msg) {
  return std::string_view(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg)));
}

// The message id of chunk `chunk` (or of the manifest, chunk < 0).
std::string MessageId(uint64_t sequence, uint32_t bundle_crc, int64_t chunk) {
  char crc[9];
  std::snprintf(crc, sizeof(crc), "%08" PRIx32, bundle_crc);
  return absl::StrCat("snap-", sequence, "-", crc, "-",
                      chunk < 0 ? std::string("manifest") : absl::StrCat(chunk));
}

uint64_t ChunkCount(uint64_t total_bytes) {
  return (total_bytes + kSnapshotChunkBytes - 1) / kSnapshotChunkBytes;
}

std::string EncodeManifest(const SnapshotStore::Manifest& m) {
  std::string out(kManifestMagic);
  coding::PutFixed32(&out, kManifestVersion);
  coding::PutFixed64(&out, m.sequence);
  coding::PutFixed64(&out, m.total_bytes);
  coding::PutFixed32(&out, static_cast<uint32_t>(m.chunk_stream_sequences.size()));
  coding::PutFixed64(&out, m.chunk_stream_sequences.empty() ? 0 : m.chunk_stream_sequences[0]);
  coding::PutFixed32(&out, m.bundle_crc);
  for (uint64_t s : m.chunk_stream_sequences) coding::PutFixed64(&out, s);
  coding::PutFixed32(&out, MaskedCrc(out));
  return out;
}

absl::StatusOr<SnapshotStore::Manifest> DecodeManifest(std::string_view bytes) {
  auto corrupt = [](const std::string& what) {
    return absl::DataLossError(absl::StrCat("snapshot manifest is corrupt: ", what));
  };
  if (bytes.size() < kManifestHeaderBytes + 4) return corrupt("truncated");
  if (bytes.substr(0, kManifestMagic.size()) != kManifestMagic) return corrupt("bad magic");
  const std::string_view body = bytes.substr(0, bytes.size() - 4);
  uint32_t crc = 0, version = 0, count = 0;
  coding::Decoder(bytes.substr(body.size())).GetFixed32(&crc);
  if (crc != MaskedCrc(body)) return corrupt("checksum mismatch");
  coding::Decoder in(body.substr(kManifestMagic.size()));
  SnapshotStore::Manifest m;
  uint64_t first = 0;
  in.GetFixed32(&version);
  in.GetFixed64(&m.sequence);
  in.GetFixed64(&m.total_bytes);
  in.GetFixed32(&count);
  in.GetFixed64(&first);
  in.GetFixed32(&m.bundle_crc);
  if (version > kManifestVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "snapshot manifest version ", version, " is newer than this build's ", kManifestVersion));
  }
  if (version == 0 || count != ChunkCount(m.total_bytes) ||
      in.remaining().size() != uint64_t{count} * 8) {
    return corrupt("chunk count differs from the size");
  }
  m.chunk_stream_sequences.resize(count);
  for (uint64_t& s : m.chunk_stream_sequences) in.GetFixed64(&s);
  if (count > 0 && first != m.chunk_stream_sequences[0]) return corrupt("first chunk differs");
  return m;
}

// Owns a nats.c message.
struct MsgDeleter {
  void operator()(natsMsg* msg) const { natsMsg_Destroy(msg); }
};
using MsgPtr = std::unique_ptr<natsMsg, MsgDeleter>;

}  // namespace

SnapshotStore::SnapshotStore(jsCtx* js, std::string stream, std::string subject_prefix,
                             std::chrono::milliseconds timeout)
    : js_(js),
      stream_(std::move(stream)),
      chunk_subject_(subject_prefix + ".chunk"),
      manifest_subject_(subject_prefix + ".manifest"),
      timeout_(timeout) {}

absl::StatusOr<std::unique_ptr<SnapshotStore>> SnapshotStore::Open(
    jsCtx* js, std::string stream, std::string subject_prefix, int replicas,
    std::chrono::milliseconds timeout, bool create_if_missing) {
  if (js == nullptr || stream.empty() || subject_prefix.empty() || replicas < 1 ||
      timeout.count() <= 0) {
    return absl::InvalidArgumentError(
        "SnapshotStore needs a JetStream context, a stream, a subject prefix, replicas >= 1 "
        "and a positive timeout");
  }
  std::unique_ptr<SnapshotStore> store(
      new SnapshotStore(js, std::move(stream), std::move(subject_prefix), timeout));
  jsOptions options;
  jsOptions_Init(&options);
  options.Wait = timeout.count();
  jsStreamInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&info, js, store->stream_.c_str(), &options, &code);
  if (s == NATS_OK) {
    jsStreamInfo_Destroy(info);
    return store;
  }
  absl::Status found = FromNats(s, code, absl::StrCat("looking up stream ", store->stream_));
  if (!absl::IsNotFound(found) || !create_if_missing) return found;
  const char* subjects[] = {store->chunk_subject_.c_str(), store->manifest_subject_.c_str()};
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  config.Name = store->stream_.c_str();
  config.Subjects = subjects;
  config.SubjectsLen = 2;
  config.Storage = js_FileStorage;
  config.Replicas = replicas;
  config.MaxMsgSize = static_cast<int32_t>(kSnapshotChunkBytes) + kHeaderHeadroom;
  config.Duplicates = kDuplicateWindowNanos;
  code = static_cast<jsErrCode>(0);
  s = js_AddStream(&info, js, &config, &options, &code);
  if (s == NATS_OK) jsStreamInfo_Destroy(info);
  // Another replica may have created it in between.
  if (s == NATS_OK || code == JSStreamNameExistErr) return store;
  return FromNats(s, code, absl::StrCat("creating stream ", store->stream_));
}

absl::Status SnapshotStore::Publish(uint64_t sequence, std::string_view bytes, int keep) {
  if (keep < 1) return absl::InvalidArgumentError("keep must be at least 1");
  Manifest manifest;
  manifest.sequence = sequence;
  manifest.total_bytes = bytes.size();
  manifest.bundle_crc = MaskedCrc(bytes);
  const uint64_t chunks = ChunkCount(bytes.size());
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MaxWait = timeout_.count();
  options.ExpectStream = stream_.c_str();
  auto publish = [&](const std::string& subject, std::string_view data, int64_t chunk,
                     uint64_t* stream_sequence) {
    const std::string id = MessageId(sequence, manifest.bundle_crc, chunk);
    options.MsgId = id.c_str();
    jsPubAck* ack = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    natsStatus s = js_Publish(&ack, js_, subject.c_str(), data.data(),
                              static_cast<int>(data.size()), &options, &code);
    if (s == NATS_OK) {
      *stream_sequence = ack->Sequence;  // the original's for a duplicate
      jsPubAck_Destroy(ack);
    }
    return FromNats(s, code,
                    absl::StrCat("did not acknowledge ",
                                 chunk < 0 ? std::string("the manifest")
                                           : absl::StrCat("chunk ", chunk + 1, " of ", chunks),
                                 " of the snapshot at sequence ", sequence));
  };
  for (uint64_t i = 0; i < chunks; ++i) {
    uint64_t stream_sequence = 0;
    absl::Status s =
        publish(chunk_subject_, bytes.substr(i * kSnapshotChunkBytes, kSnapshotChunkBytes),
                static_cast<int64_t>(i), &stream_sequence);
    if (!s.ok()) return s;
    manifest.chunk_stream_sequences.push_back(stream_sequence);
  }
  uint64_t manifest_sequence = 0;
  if (absl::Status s = publish(manifest_subject_, EncodeManifest(manifest), -1, &manifest_sequence);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Trim(keep); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("published the snapshot at sequence ", sequence,
                                               " but trimming older ones failed: ", s.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<SnapshotStore::Manifests> SnapshotStore::ReadManifests() {
  Manifests out;
  jsOptions options;
  jsOptions_Init(&options);
  options.Wait = timeout_.count();
  natsMsg* raw = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  absl::Status last = FromNats(
      js_GetLastMsg(&raw, js_, stream_.c_str(), manifest_subject_.c_str(), &options, &code), code,
      "reading the newest snapshot manifest");
  if (code == JSStreamNotFoundErr) {
    // Open found or made the stream: a server that does not know it has
    // not caught up with the cluster yet (it just restarted, say). That
    // is no answer to "which snapshots exist", so the reader retries.
    return absl::UnavailableError(last.message());
  }
  if (absl::IsNotFound(last)) return out;
  if (!last.ok()) return last;
  const uint64_t last_sequence = natsMsg_GetSequence(raw);
  natsMsg_Destroy(raw);

  // An ordered consumer delivers every manifest once, oldest first.
  jsSubOptions sub_options;
  jsSubOptions_Init(&sub_options);
  sub_options.Stream = stream_.c_str();
  sub_options.Ordered = true;
  sub_options.Config.DeliverPolicy = js_DeliverAll;
  natsSubscription* sub = nullptr;
  code = static_cast<jsErrCode>(0);
  if (absl::Status s = FromNats(
          js_SubscribeSync(&sub, js_, manifest_subject_.c_str(), &options, &sub_options, &code),
          code, "subscribing to the snapshot manifests");
      !s.ok()) {
    return s;
  }
  absl::Status status;
  for (int i = 0; i < kMaxManifests; ++i) {
    natsMsg* next = nullptr;
    status = FromNats(natsSubscription_NextMsg(&next, sub, timeout_.count()),
                      static_cast<jsErrCode>(0), "reading the snapshot manifests");
    if (!status.ok()) break;
    MsgPtr msg(next);
    jsMsgMetaData* meta = nullptr;
    status = FromNats(natsMsg_GetMetaData(&meta, msg.get()), static_cast<jsErrCode>(0),
                      "reading a snapshot manifest's metadata");
    if (!status.ok()) break;
    const uint64_t stream_sequence = meta->Sequence.Stream;
    const uint64_t pending = meta->NumPending;
    jsMsgMetaData_Destroy(meta);
    auto manifest = DecodeManifest(DataOf(msg.get()));
    if (manifest.ok()) {
      manifest->stream_sequence = stream_sequence;
      out.manifests.push_back(*std::move(manifest));
    } else {
      out.rejected.push_back(absl::StrCat("manifest at stream sequence ", stream_sequence, ": ",
                                          manifest.status().message()));
    }
    // The newest may have been removed meanwhile: stop when none is pending.
    if (stream_sequence >= last_sequence || pending == 0) break;
  }
  natsSubscription_Unsubscribe(sub);
  natsSubscription_Destroy(sub);
  if (!status.ok()) return status;
  std::sort(out.manifests.begin(), out.manifests.end(), [](const Manifest& a, const Manifest& b) {
    return std::tie(a.sequence, a.stream_sequence) > std::tie(b.sequence, b.stream_sequence);
  });
  return out;
}

absl::StatusOr<std::vector<SnapshotStore::Published>> SnapshotStore::List() {
  auto manifests = ReadManifests();
  if (!manifests.ok()) return manifests.status();
  std::vector<Published> out;
  for (const Manifest& m : manifests->manifests) out.push_back({m.sequence, m.total_bytes});
  return out;
}

absl::Status SnapshotStore::Trim(int keep) {
  auto read = ReadManifests();
  if (!read.ok()) return read.status();
  const std::vector<Manifest>& manifests = read->manifests;
  const size_t kept = std::min(manifests.size(), static_cast<size_t>(keep));
  if (kept == 0) return absl::OkStatus();
  uint64_t first_chunk = UINT64_MAX, first_manifest = UINT64_MAX;
  for (size_t i = 0; i < kept; ++i) {
    first_manifest = std::min(first_manifest, manifests[i].stream_sequence);
    for (uint64_t s : manifests[i].chunk_stream_sequences) first_chunk = std::min(first_chunk, s);
  }
  jsOptions options;
  jsOptions_Init(&options);
  options.Wait = timeout_.count();
  // Nothing precedes sequence 1, and nats-server (2.9) takes a filtered
  // purge below 0 or 1 as a purge of the whole subject.
  auto purge_below = [&](const std::string& subject, uint64_t below) {
    if (below <= 1) return absl::OkStatus();
    options.Stream.Purge.Subject = subject.c_str();
    options.Stream.Purge.Sequence = below;
    jsErrCode code = static_cast<jsErrCode>(0);
    return FromNats(js_PurgeStream(js_, stream_.c_str(), &options, &code), code,
                    absl::StrCat("purging ", subject, " below stream sequence ", below));
  };
  if (first_chunk != UINT64_MAX) {  // a kept snapshot has chunks
    if (absl::Status s = purge_below(chunk_subject_, first_chunk); !s.ok()) return s;
  }
  if (absl::Status s = purge_below(manifest_subject_, first_manifest); !s.ok()) return s;
  // Older snapshots whose manifests came later in the stream than a kept one.
  for (size_t i = kept; i < manifests.size(); ++i) {
    if (manifests[i].stream_sequence < first_manifest) continue;
    jsErrCode code = static_cast<jsErrCode>(0);
    absl::Status s = FromNats(
        js_DeleteMsg(js_, stream_.c_str(), manifests[i].stream_sequence, &options, &code), code,
        absl::StrCat("deleting the manifest at stream sequence ", manifests[i].stream_sequence));
    if (!s.ok() && !absl::IsNotFound(s)) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> SnapshotStore::Download(const Manifest& manifest) {
  jsOptions options;
  jsOptions_Init(&options);
  options.Wait = timeout_.count();
  std::string out;
  out.reserve(manifest.total_bytes);
  const size_t count = manifest.chunk_stream_sequences.size();
  for (size_t i = 0; i < count; ++i) {
    const uint64_t at = manifest.chunk_stream_sequences[i];
    const std::string where =
        absl::StrCat("chunk ", i + 1, " of ", count, " (stream sequence ", at, ")");
    natsMsg* raw = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    absl::Status s = FromNats(js_GetMsg(&raw, js_, stream_.c_str(), at, &options, &code), code,
                              absl::StrCat("reading ", where));
    if (absl::IsNotFound(s)) return absl::DataLossError(absl::StrCat(where, " is missing"));
    if (!s.ok()) return s;
    MsgPtr msg(raw);
    const char* id = nullptr;
    const std::string expected_id =
        MessageId(manifest.sequence, manifest.bundle_crc, static_cast<int64_t>(i));
    const uint64_t expected_size =
        std::min<uint64_t>(kSnapshotChunkBytes, manifest.total_bytes - i * kSnapshotChunkBytes);
    const std::string_view data = DataOf(msg.get());
    if (natsMsg_GetSubject(msg.get()) != chunk_subject_ ||
        natsMsgHeader_Get(msg.get(), "Nats-Msg-Id", &id) != NATS_OK || id != expected_id) {
      return absl::DataLossError(absl::StrCat(where, " is another message"));
    }
    if (data.size() != expected_size) {
      return absl::DataLossError(
          absl::StrCat(where, " holds ", data.size(), " bytes, expected ", expected_size));
    }
    out.append(data.data(), data.size());
  }
  if (out.size() != manifest.total_bytes || MaskedCrc(out) != manifest.bundle_crc) {
    return absl::DataLossError("the chunks' checksum differs from the manifest's");
  }
  return out;
}

absl::StatusOr<std::optional<std::pair<uint64_t, std::string>>> SnapshotStore::FetchNewest(
    std::vector<std::string>* rejected) {
  auto read = ReadManifests();
  if (!read.ok()) return read.status();
  if (rejected != nullptr) {
    rejected->insert(rejected->end(), read->rejected.begin(), read->rejected.end());
  }
  for (const Manifest& manifest : read->manifests) {
    auto bytes = Download(manifest);
    if (bytes.ok()) return std::make_pair(manifest.sequence, *std::move(bytes));
    if (!absl::IsDataLoss(bytes.status())) return bytes.status();
    if (rejected != nullptr) {
      rejected->push_back(absl::StrCat("published snapshot at sequence ", manifest.sequence,
                                       " (manifest at stream sequence ", manifest.stream_sequence,
                                       "): ", bytes.status().message()));
    }
  }
  return std::nullopt;
}

}  // namespace clickd
