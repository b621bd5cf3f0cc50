#include "core/persist/snapshot.h"

#include "absl/strings/str_cat.h"
#include "core/persist/coding.h"
#include "core/persist/crc32c.h"

namespace clickd {
namespace {

using coding::Decoder;

constexpr std::string_view kMagic = "CLKDSNAP";
constexpr std::string_view kFooterMagic = "CLKDEND.";
// Records per coordinate block: bounds a block to a few MB so that a
// corrupt length cannot ask for gigabytes.
constexpr uint32_t kRecordsPerBlock = 65536;
constexpr uint32_t kMaxStateSize = 1024;
constexpr uint32_t kMaxHeaderBytes = 1 << 20;

absl::Status Corrupt(const std::string& what) {
  return absl::DataLossError(absl::StrCat("snapshot is corrupt: ", what));
}

uint32_t MaskedCrc(std::string_view bytes) {
  return crc32c::Mask(crc32c::Value(bytes.data(), bytes.size()));
}

void AppendChecked(std::string* out, std::string_view payload) {
  out->append(payload.data(), payload.size());
  coding::PutFixed32(out, MaskedCrc(payload));
}

// Reads `n` bytes followed by their masked CRC.
bool GetChecked(Decoder* in, size_t n, std::string_view* payload) {
  uint32_t crc;
  return in->GetBytes(n, payload) && in->GetFixed32(&crc) && crc == MaskedCrc(*payload);
}

std::string EncodeHeader(const SnapshotContents& c, uint64_t count) {
  std::string h;
  EncodeModelConfig(c.config, &h);
  coding::PutFixed64(&h, c.log_sequence);
  coding::PutFixed64(&h, c.state.round.t);
  coding::PutDouble(&h, c.state.round.sum_grad_norm_sq);
  coding::PutFixed64(&h, c.state.round.coordinates);
  coding::PutFixed32(&h, c.state.state_size);
  coding::PutFixed64(&h, count);
  return h;
}

// Calls emit() with each piece of the file in order: header, blocks, footer.
template <typename Emit>
absl::Status EmitSnapshot(const SnapshotContents& c, Emit&& emit) {
  const size_t record = sizeof(uint64_t) + c.state.state_size;
  const uint64_t count = record == 0 ? 0 : c.state.coordinates.size() / record;
  std::string piece(kMagic);
  coding::PutFixed32(&piece, kSnapshotFormatVersion);
  const std::string header = EncodeHeader(c, count);
  coding::PutFixed32(&piece, static_cast<uint32_t>(header.size()));
  AppendChecked(&piece, header);
  if (absl::Status s = emit(piece); !s.ok()) return s;
  for (uint64_t first = 0; first < count; first += kRecordsPerBlock) {
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(kRecordsPerBlock, count - first));
    std::string block;
    coding::PutFixed32(&block, n);
    block.append(c.state.coordinates, first * record, n * record);
    piece.clear();
    AppendChecked(&piece, block);
    if (absl::Status s = emit(piece); !s.ok()) return s;
  }
  // Version 2: the dense block's state, one checked block (empty without one).
  std::string dense;
  coding::PutFixed64(&dense, c.state.dense_state.size());
  dense += c.state.dense_state;
  piece.clear();
  AppendChecked(&piece, dense);
  if (absl::Status s = emit(piece); !s.ok()) return s;
  piece.assign(kFooterMagic);
  std::string totals;
  coding::PutFixed64(&totals, count);
  AppendChecked(&piece, totals);
  return emit(piece);
}

}  // namespace

namespace {

// Version 1 of the config encoding starts with the name's length (<= 128);
// later versions start with this marker and their version number.
constexpr uint32_t kConfigVersionMarker = 0xFFFFFFFFu;
constexpr uint32_t kConfigVersion = 4;

// A parameter of an optimizer added after version 1, and the encoding
// version that added it.
struct LaterParam {
  uint32_t since;
  double* value;
};

// The parameters of optimizers added after version 1, in a fixed order:
// every optimizer's, whichever the model uses, so that every config has one
// encoding. New ones go at the end, with a new version.
std::vector<LaterParam> ParamsSinceV1(OptimizerConfig& o) {
  return {{2, &o.pa.c},
          {2, &o.cw.eta},
          {2, &o.cw.a},
          {4, &o.metagrad_diag.diameter},
          {4, &o.metagrad_diag.gradient_bound}};
}

}  // namespace

void EncodeModelConfig(const ModelConfig& c, std::string* out) {
  coding::PutFixed32(out, kConfigVersionMarker);
  coding::PutFixed32(out, kConfigVersion);
  coding::PutString(out, c.name);
  coding::PutFixed32(out, static_cast<uint32_t>(c.loss));
  const OptimizerConfig& o = c.optimizer;
  coding::PutFixed32(out, static_cast<uint32_t>(o.type));
  for (double v : {o.ftrl.alpha, o.ftrl.beta, o.ftrl.lambda1, o.ftrl.lambda2, o.adagrad.eta,
                   o.adagrad.delta, o.adagrad.lambda, o.pc_ogd.radius, o.pc_ogd.scale,
                   o.global_ogd.radius, o.global_ogd.scale, o.sgd.eta}) {
    coding::PutDouble(out, v);
  }
  OptimizerConfig copy = o;
  for (const LaterParam& p : ParamsSinceV1(copy)) coding::PutDouble(out, *p.value);
  coding::PutFixed32(out, o.ftrl.lambda1_times_t ? 1 : 0);
  coding::PutFixed64(out, c.hashing.seed);
  coding::PutFixed32(out, static_cast<uint32_t>(c.hashing.bits));
  coding::PutFixed32(out, c.hashing.bias ? 1 : 0);
  coding::PutFixed32(out, static_cast<uint32_t>(c.hashing.interactions.size()));
  for (const auto& names : c.hashing.interactions) {
    coding::PutFixed32(out, static_cast<uint32_t>(names.size()));
    for (const auto& n : names) coding::PutString(out, n);
  }
  coding::PutFixed32(out, static_cast<uint32_t>(c.num_shards));
  // Version 3: the dense block.
  coding::PutFixed32(out, static_cast<uint32_t>(c.dense_namespaces.size()));
  for (const DenseNamespace& ns : c.dense_namespaces) {
    coding::PutString(out, ns.name);
    coding::PutFixed32(out, static_cast<uint32_t>(ns.dim));
  }
  const DenseOptimizerConfig& d = c.dense_optimizer;
  coding::PutFixed32(out, static_cast<uint32_t>(d.type));
  for (double v : {d.eta, d.delta, d.weight_power, d.diameter, d.gradient_bound}) {
    coding::PutDouble(out, v);
  }
  coding::PutFixed32(out, static_cast<uint32_t>(d.tau));
}

absl::StatusOr<ModelConfig> DecodeModelConfig(std::string_view bytes) {
  Decoder in(bytes);
  ModelConfig c;
  OptimizerConfig& o = c.optimizer;
  uint32_t loss = 0, type = 0, times_t = 0, bits = 0, bias = 0, n = 0, shards = 0;
  uint32_t version = 1;
  {
    Decoder peek(bytes);
    uint32_t first = 0;
    if (peek.GetFixed32(&first) && first == kConfigVersionMarker) {
      in.GetFixed32(&first);
      in.GetFixed32(&version);
      if (version < 2 || version > kConfigVersion) {
        return Corrupt(absl::StrCat("model config encoding version ", version, " is unknown"));
      }
    }
  }
  in.GetString(&c.name);
  in.GetFixed32(&loss);
  in.GetFixed32(&type);
  for (double* v : {&o.ftrl.alpha, &o.ftrl.beta, &o.ftrl.lambda1, &o.ftrl.lambda2, &o.adagrad.eta,
                    &o.adagrad.delta, &o.adagrad.lambda, &o.pc_ogd.radius, &o.pc_ogd.scale,
                    &o.global_ogd.radius, &o.global_ogd.scale, &o.sgd.eta}) {
    in.GetDouble(v);
  }
  for (const LaterParam& p : ParamsSinceV1(o)) {
    if (version >= p.since) in.GetDouble(p.value);
  }
  in.GetFixed32(&times_t);
  in.GetFixed64(&c.hashing.seed);
  in.GetFixed32(&bits);
  in.GetFixed32(&bias);
  in.GetFixed32(&n);
  for (uint32_t i = 0; i < n && in.ok(); ++i) {
    uint32_t arity = 0;
    in.GetFixed32(&arity);
    if (arity > 3) return Corrupt("an interaction has more than 3 namespaces");
    std::vector<std::string> names(arity);
    for (auto& name : names) in.GetString(&name);
    c.hashing.interactions.push_back(std::move(names));
  }
  in.GetFixed32(&shards);
  uint32_t dense_type = 0, tau = 0;
  if (version >= 3) {
    uint32_t count = 0;
    in.GetFixed32(&count);
    if (count > in.remaining().size()) return Corrupt("the dense namespace count is corrupt");
    for (uint32_t i = 0; i < count && in.ok(); ++i) {
      DenseNamespace ns;
      uint32_t dim = 0;
      in.GetString(&ns.name);
      in.GetFixed32(&dim);
      if (dim > static_cast<uint32_t>(kMaxDenseDim)) return Corrupt("a dense dimension is corrupt");
      ns.dim = static_cast<int>(dim);
      c.dense_namespaces.push_back(std::move(ns));
    }
    DenseOptimizerConfig& d = c.dense_optimizer;
    in.GetFixed32(&dense_type);
    for (double* v : {&d.eta, &d.delta, &d.weight_power, &d.diameter, &d.gradient_bound}) {
      in.GetDouble(v);
    }
    in.GetFixed32(&tau);
    if (DenseOptimizerTypeName(static_cast<DenseOptimizerType>(dense_type)) == "unknown" ||
        tau > static_cast<uint32_t>(kMaxDenseDim)) {
      return Corrupt("the dense optimizer config has out-of-range fields");
    }
    d.type = static_cast<DenseOptimizerType>(dense_type);
    d.tau = static_cast<int>(tau);
  }
  if (!in.ok() || !in.remaining().empty()) return Corrupt("the model config does not parse");
  // Booleans must be 0 or 1, so that every file has one decoding and one
  // encoding (the fuzzer checks decode-then-encode is the identity, for the
  // current version).
  // A type this build does not know has no name.
  const bool known_type = version == 1
                              ? type <= static_cast<uint32_t>(OptimizerType::kSgd)
                              : OptimizerTypeName(static_cast<OptimizerType>(type)) != "unknown";
  if (times_t > 1 || bias > 1 || loss > static_cast<uint32_t>(LossType::kHinge) || !known_type ||
      bits > 62 || shards > kMaxShards) {
    return Corrupt("the model config has out-of-range fields");
  }
  c.loss = static_cast<LossType>(loss);
  o.type = static_cast<OptimizerType>(type);
  o.ftrl.lambda1_times_t = times_t != 0;
  c.hashing.bits = static_cast<int>(bits);
  c.hashing.bias = bias != 0;
  c.num_shards = static_cast<int>(shards);
  if (absl::Status s = ValidateModelConfig(c); !s.ok()) {
    return Corrupt(absl::StrCat("the model config is invalid: ", s.message()));
  }
  return c;
}

std::string EncodeSnapshot(const SnapshotContents& contents) {
  std::string out;
  (void)EmitSnapshot(contents, [&out](std::string_view piece) {
    out.append(piece.data(), piece.size());
    return absl::OkStatus();
  });
  return out;
}

absl::Status WriteSnapshot(Env* env, const std::string& path, const SnapshotContents& contents) {
  return WriteFileAtomically(env, path, [&contents](WritableFile* file) {
    return EmitSnapshot(contents, [file](std::string_view piece) { return file->Append(piece); });
  });
}

absl::StatusOr<SnapshotContents> DecodeSnapshot(std::string_view bytes) {
  Decoder in(bytes);
  std::string_view magic;
  uint32_t version = 0, header_size = 0;
  if (!in.GetBytes(kMagic.size(), &magic) || magic != kMagic) return Corrupt("bad magic");
  if (!in.GetFixed32(&version)) return Corrupt("truncated header");
  if (version > kSnapshotFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("snapshot format version ", version, " is newer than this build's ",
                     kSnapshotFormatVersion, "; upgrade clickd to read it"));
  }
  if (version == 0) return Corrupt("format version 0");
  std::string_view header;
  if (!in.GetFixed32(&header_size) || header_size > kMaxHeaderBytes ||
      !GetChecked(&in, header_size, &header)) {
    return Corrupt("header checksum mismatch or truncated header");
  }
  // The config is followed by fixed fields: 8+8+8+8+4+8 bytes.
  constexpr size_t kFixedTail = 44;
  if (header.size() < kFixedTail) return Corrupt("header too short");
  SnapshotContents out;
  auto config = DecodeModelConfig(header.substr(0, header.size() - kFixedTail));
  if (!config.ok()) return config.status();
  out.config = *std::move(config);
  Decoder tail(header.substr(header.size() - kFixedTail));
  uint64_t count = 0;
  tail.GetFixed64(&out.log_sequence);
  tail.GetFixed64(&out.state.round.t);
  tail.GetDouble(&out.state.round.sum_grad_norm_sq);
  tail.GetFixed64(&out.state.round.coordinates);
  tail.GetFixed32(&out.state.state_size);
  tail.GetFixed64(&count);
  if (out.state.state_size == 0 || out.state.state_size > kMaxStateSize) {
    return Corrupt("state size out of range");
  }
  const size_t record = sizeof(uint64_t) + out.state.state_size;
  if (count > bytes.size() / record) return Corrupt("coordinate count exceeds the file size");
  out.state.coordinates.reserve(count * record);
  for (uint64_t read = 0; read < count;) {
    uint32_t n = 0;
    Decoder peek(in.remaining());
    // Every block but the last is full, as the writer makes them.
    const uint64_t expected = std::min<uint64_t>(kRecordsPerBlock, count - read);
    if (!peek.GetFixed32(&n) || n != expected) {
      return Corrupt(absl::StrCat("bad block after ", read, " coordinates"));
    }
    std::string_view block;
    if (!GetChecked(&in, 4 + n * record, &block)) {
      return Corrupt(
          absl::StrCat("block checksum mismatch or truncated after ", read, " coordinates"));
    }
    out.state.coordinates.append(block.substr(4));
    read += n;
  }
  if (version >= 2) {
    uint64_t dense_size = 0;
    std::string_view dense;
    Decoder peek(in.remaining());
    if (!peek.GetFixed64(&dense_size) || dense_size > in.remaining().size() ||
        !GetChecked(&in, 8 + dense_size, &dense)) {
      return Corrupt("dense block checksum mismatch or truncated");
    }
    out.state.dense_state.assign(dense.substr(8));
  }
  std::string_view footer_magic, totals;
  uint64_t footer_count = 0;
  if (!in.GetBytes(kFooterMagic.size(), &footer_magic) || footer_magic != kFooterMagic ||
      !GetChecked(&in, 8, &totals) || !Decoder(totals).GetFixed64(&footer_count)) {
    return Corrupt("missing or damaged footer (truncated file?)");
  }
  if (footer_count != count) return Corrupt("footer count differs from the header");
  if (!in.remaining().empty()) return Corrupt("trailing bytes after the footer");
  return out;
}

absl::StatusOr<SnapshotContents> ReadSnapshot(Env* env, const std::string& path) {
  auto bytes = ReadWholeFile(env, path);
  if (!bytes.ok()) return bytes.status();
  auto contents = DecodeSnapshot(*bytes);
  if (!contents.ok()) {
    return absl::Status(contents.status().code(),
                        absl::StrCat(path, ": ", contents.status().message()));
  }
  return contents;
}

}  // namespace clickd
