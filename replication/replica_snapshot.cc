#include "replication/replica_snapshot.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/coding.h"
#include "core/base/crc32c.h"

namespace clickd {
namespace {

constexpr std::string_view kMagic = "CLKDREP1";
constexpr char kFilePrefix[] = "snapshot-";
constexpr char kFileSuffix[] = ".snap";
constexpr char kTempSuffix[] = ".tmp";
constexpr size_t kSequenceDigits = 20;
// magic + version + sequence + count, and the trailing CRC.
constexpr size_t kHeaderBytes = 8 + 4 + 8 + 4;
constexpr size_t kCrcBytes = 4;
// created_sequence + length: the least a model takes.
constexpr size_t kModelPrefixBytes = 16;

absl::Status Corrupt(const std::string& what) {
  return absl::DataLossError(absl::StrCat("replica snapshot is corrupt: ", what));
}

uint32_t MaskedCrc(std::string_view bytes) {
  return crc32c::Mask(crc32c::Value(bytes.data(), bytes.size()));
}

// Decodes the models after the header; `in` holds exactly the models.
absl::Status DecodeModels(coding::Decoder* in, uint32_t count, ReplicaSnapshot* out) {
  if (count > in->remaining().size() / kModelPrefixBytes) {
    return Corrupt(absl::StrCat("model count ", count, " exceeds the bundle's size"));
  }
  out->models.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    ReplicaModel model;
    uint64_t length = 0;
    std::string_view bytes;
    if (!in->GetFixed64(&model.created_sequence) || !in->GetFixed64(&length) ||
        length > in->remaining().size() || !in->GetBytes(length, &bytes)) {
      return Corrupt(absl::StrCat("model ", i, " of ", count, " is truncated"));
    }
    auto contents = DecodeSnapshot(bytes);
    if (!contents.ok()) {
      return Corrupt(absl::StrCat("model ", i, " of ", count, ": ", contents.status().message()));
    }
    model.contents = *std::move(contents);
    const std::string& name = model.contents.config.name;
    if (!out->models.empty() && out->models.back().contents.config.name >= name) {
      return Corrupt(absl::StrCat("model \"", name, "\" is out of name order or repeated"));
    }
    if (model.created_sequence > out->sequence || model.contents.log_sequence > out->sequence) {
      return Corrupt(absl::StrCat(
          "model \"", name, "\" has a sequence (created ", model.created_sequence,
          ", last applied ", model.contents.log_sequence, ") after the bundle's ", out->sequence));
    }
    out->models.push_back(std::move(model));
  }
  if (!in->remaining().empty()) return Corrupt("trailing bytes after the last model");
  return absl::OkStatus();
}

// Removes `prefix` from the front of *s if it is there.
bool ConsumePrefix(std::string_view* s, std::string_view prefix) {
  if (!s->starts_with(prefix)) return false;
  s->remove_prefix(prefix.size());
  return true;
}

bool ConsumeSuffix(std::string_view* s, std::string_view suffix) {
  if (!s->ends_with(suffix)) return false;
  s->remove_suffix(suffix.size());
  return true;
}

// The sequence in a local copy's file name, or nullopt for another file.
std::optional<uint64_t> ParseLocalName(std::string_view name) {
  if (!ConsumePrefix(&name, kFilePrefix) || !ConsumeSuffix(&name, kFileSuffix) ||
      name.size() != kSequenceDigits ||
      !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  uint64_t sequence = 0;
  if (!absl::SimpleAtoi(absl::string_view(name.data(), name.size()), &sequence)) {
    return std::nullopt;
  }
  return sequence;
}

// The local copies in `dir` (sequence, name), newest first; none without `dir`.
absl::StatusOr<std::vector<std::pair<uint64_t, std::string>>> ListLocal(Env* env,
                                                                        const std::string& dir) {
  std::vector<std::pair<uint64_t, std::string>> out;
  if (!env->FileExists(dir)) return out;
  auto names = env->ListDir(dir);
  if (!names.ok()) return names.status();
  for (std::string& name : *names) {
    if (std::optional<uint64_t> sequence = ParseLocalName(name)) {
      out.emplace_back(*sequence, std::move(name));
    }
  }
  std::sort(out.begin(), out.end(), std::greater<>());
  return out;
}

}  // namespace

std::string EncodeReplicaSnapshot(const ReplicaSnapshot& snapshot) {
  std::vector<const ReplicaModel*> models;
  models.reserve(snapshot.models.size());
  for (const ReplicaModel& model : snapshot.models) models.push_back(&model);
  std::sort(models.begin(), models.end(), [](const ReplicaModel* a, const ReplicaModel* b) {
    return a->contents.config.name < b->contents.config.name;
  });
  std::string out(kMagic);
  coding::PutFixed32(&out, kReplicaSnapshotFormatVersion);
  coding::PutFixed64(&out, snapshot.sequence);
  coding::PutFixed32(&out, snapshot.chain.has_value() ? 1 : 0);
  coding::PutFixed64(&out, snapshot.chain.value_or(LogDigest{}).high);
  coding::PutFixed64(&out, snapshot.chain.value_or(LogDigest{}).low);
  coding::PutString(&out, snapshot.applied_ids);
  coding::PutFixed32(&out, static_cast<uint32_t>(models.size()));
  for (const ReplicaModel* model : models) {
    const std::string bytes = EncodeSnapshot(model->contents);
    coding::PutFixed64(&out, model->created_sequence);
    coding::PutFixed64(&out, bytes.size());
    out += bytes;
  }
  coding::PutFixed32(&out, MaskedCrc(out));
  return out;
}

absl::StatusOr<ReplicaSnapshot> DecodeReplicaSnapshot(std::string_view bytes) {
  if (bytes.size() < kHeaderBytes + kCrcBytes) {
    return Corrupt(absl::StrCat("only ", bytes.size(), " bytes (truncated?)"));
  }
  if (bytes.substr(0, kMagic.size()) != kMagic) return Corrupt("bad magic");
  const std::string_view body = bytes.substr(0, bytes.size() - kCrcBytes);
  uint32_t crc = 0;
  coding::Decoder(bytes.substr(body.size())).GetFixed32(&crc);
  if (crc != MaskedCrc(body)) return Corrupt("checksum mismatch (damaged or truncated)");
  coding::Decoder in(body.substr(kMagic.size()));
  uint32_t version = 0, count = 0;
  ReplicaSnapshot out;
  in.GetFixed32(&version);
  in.GetFixed64(&out.sequence);
  if (version > kReplicaSnapshotFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("replica snapshot format version ", version, " is newer than this build's ",
                     kReplicaSnapshotFormatVersion, "; upgrade clickd to read it"));
  }
  if (version == 0) return Corrupt("format version 0");
  if (version >= 2) {
    uint32_t known = 0;
    LogDigest chain;
    if (!in.GetFixed32(&known) || !in.GetFixed64(&chain.high) || !in.GetFixed64(&chain.low) ||
        known > 1 || !in.GetString(&out.applied_ids)) {
      return Corrupt("log chain or applied message ids truncated or malformed");
    }
    if (known == 1) out.chain = chain;
  }
  if (!in.GetFixed32(&count)) return Corrupt("model count truncated");
  if (absl::Status s = DecodeModels(&in, count, &out); !s.ok()) return s;
  return out;
}

std::string LocalReplicaSnapshotName(uint64_t sequence) {
  char digits[kSequenceDigits + 1];
  std::snprintf(digits, sizeof(digits), "%020" PRIu64, sequence);
  return absl::StrCat(kFilePrefix, digits, kFileSuffix);
}

absl::Status WriteLocalReplicaSnapshot(Env* env, const std::string& dir, uint64_t sequence,
                                       std::string_view bytes, int keep) {
  if (keep < 1) return absl::InvalidArgumentError("keep must be at least 1");
  if (absl::Status s = env->CreateDirs(dir); !s.ok()) return s;
  const std::string name = LocalReplicaSnapshotName(sequence);
  absl::Status written =
      WriteFileAtomically(env, absl::StrCat(dir, "/", name),
                          [bytes](WritableFile* file) { return file->Append(bytes); });
  if (!written.ok()) return written;
  auto names = env->ListDir(dir);
  if (!names.ok()) return names.status();
  // Temp files a crash left behind: WriteFileAtomically names them <file>.tmp.
  for (const std::string& other : *names) {
    std::string_view base = other;
    if (ConsumeSuffix(&base, kTempSuffix) && ParseLocalName(base).has_value()) {
      if (absl::Status s = env->RemoveFile(absl::StrCat(dir, "/", other)); !s.ok()) return s;
    }
  }
  auto local = ListLocal(env, dir);
  if (!local.ok()) return local.status();
  for (size_t i = static_cast<size_t>(keep); i < local->size(); ++i) {
    if (absl::Status s = env->RemoveFile(absl::StrCat(dir, "/", (*local)[i].second)); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<LocalReplicaSnapshot> LoadNewestLocalReplicaSnapshot(Env* env,
                                                                    const std::string& dir) {
  auto local = ListLocal(env, dir);
  if (!local.ok()) return local.status();
  LocalReplicaSnapshot out;
  for (const auto& [sequence, name] : *local) {
    const std::string path = absl::StrCat(dir, "/", name);
    auto bytes = ReadWholeFile(env, path);
    if (!bytes.ok()) return bytes.status();
    auto snapshot = DecodeReplicaSnapshot(*bytes);
    if (snapshot.ok() && snapshot->sequence != sequence) {
      snapshot = Corrupt(
          absl::StrCat("holds sequence ", snapshot->sequence, ", its name says ", sequence));
    }
    if (snapshot.status().code() == absl::StatusCode::kFailedPrecondition) {
      return absl::FailedPreconditionError(absl::StrCat(path, ": ", snapshot.status().message()));
    }
    if (!snapshot.ok()) {
      out.rejected.push_back(absl::StrCat(path, ": ", snapshot.status().message()));
      continue;
    }
    out.path = path;
    out.snapshot = *std::move(snapshot);
    return out;
  }
  return out;
}

}  // namespace clickd
