#include "core/persist/snapshot.h"

#include "absl/strings/str_cat.h"
#include "core/base/coding.h"
#include "core/base/crc32c.h"
#include "core/eval/online_calibration.h"
#include "core/persist/model_config_codec.h"
#include "core/store/feature_admission.h"

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

uint64_t CoordinateCount(const Model::State& state) {
  const size_t record = sizeof(uint64_t) + state.state_size;
  return record == 0 ? 0 : state.coordinates.size() / record;
}

// Calls emit() with each checked block of the state's coordinates.
template <typename Emit>
absl::Status EmitCoordinateBlocks(const Model::State& state, Emit& emit) {
  const size_t record = sizeof(uint64_t) + state.state_size;
  const uint64_t count = CoordinateCount(state);
  std::string piece;
  for (uint64_t first = 0; first < count; first += kRecordsPerBlock) {
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(kRecordsPerBlock, count - first));
    std::string block;
    coding::PutFixed32(&block, n);
    block.append(state.coordinates, first * record, n * record);
    piece.clear();
    AppendChecked(&piece, block);
    if (absl::Status s = emit(piece); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// Version 3: each variant's round, state size and coordinates, then the
// champion selection (docs/snapshot_format.md).
template <typename Emit>
absl::Status EmitVariants(const Model::State& state, Emit& emit) {
  std::string piece, count;
  coding::PutFixed32(&count, static_cast<uint32_t>(state.variants.size()));
  AppendChecked(&piece, count);
  if (absl::Status s = emit(piece); !s.ok()) return s;
  for (const Model::State& v : state.variants) {
    std::string header;
    coding::PutFixed32(&header, v.state_size);
    coding::PutFixed64(&header, v.round.t);
    coding::PutDouble(&header, v.round.sum_grad_norm_sq);
    coding::PutFixed64(&header, v.round.coordinates);
    coding::PutFixed64(&header, CoordinateCount(v));
    piece.clear();
    AppendChecked(&piece, header);
    if (absl::Status s = emit(piece); !s.ok()) return s;
    if (absl::Status s = EmitCoordinateBlocks(v, emit); !s.ok()) return s;
  }
  std::string selection;
  coding::PutFixed32(&selection, static_cast<uint32_t>(state.selection.size()));
  selection += state.selection;
  piece.clear();
  AppendChecked(&piece, selection);
  return emit(piece);
}

// Version 4's optional sections, in file order after the dense block.
// (Plain constants, not an enum, so that `c ? kSection : 0` is one type.)
constexpr uint32_t kVariantsSection = 1;
constexpr uint32_t kFeedbackSection = 2;
constexpr uint32_t kIdempotencySection = 4;
constexpr uint32_t kCalibrationSection = 8;
constexpr uint32_t kAdmissionSection = 16;
constexpr uint32_t kFactorsSection = 32;
// Any other bit is a section this build cannot read: refused, never skipped.
constexpr uint32_t kKnownSections = 63;

// Whether the model or a variant has a factorization: exactly then the
// snapshot holds the factors section.
bool HasFactors(const ModelConfig& config) {
  if (config.factorization.enabled()) return true;
  for (const auto& v : config.variants) {
    if (v.factorization.enabled()) return true;
  }
  return false;
}

// Whether the config's admission policy (the primary's or a variant's)
// keeps counts in the learned state: exactly then the snapshot holds the
// admission section, so a model without one writes what earlier builds did.
bool KeepsAdmissionState(const ModelConfig& config) {
  if (config.admission.policy == AdmissionOptions::Policy::kBloom) return true;
  for (const auto& v : config.variants) {
    if (v.admission.policy == AdmissionOptions::Policy::kBloom) return true;
  }
  return false;
}

// Only a model configured for calibration has one: the bytes of any other
// are left out, so that its snapshot is the file earlier builds wrote.
bool HasCalibration(const SnapshotContents& c) {
  return c.config.calibration.enabled && !c.calibration.empty();
}

// The oldest format that holds the contents: a model without variants, an
// impression-to-click loop, idempotency keys or a calibration is written as
// version 2 (the layout builds before version 3 wrote; the config inside is
// in the current config encoding).
uint32_t FormatVersionFor(const SnapshotContents& c) {
  if (c.config.feedback.enabled() || !c.idempotency.empty() || HasCalibration(c) ||
      KeepsAdmissionState(c.config) || HasFactors(c.config)) {
    return 4;
  }
  return c.state.variants.empty() ? 2 : 3;
}

uint32_t SectionsOf(const SnapshotContents& c) {
  return (c.state.variants.empty() ? 0 : kVariantsSection) |
         (c.config.feedback.enabled() ? kFeedbackSection : 0) |
         (c.idempotency.empty() ? 0 : kIdempotencySection) |
         (HasCalibration(c) ? kCalibrationSection : 0) |
         (KeepsAdmissionState(c.config) ? kAdmissionSection : 0) |
         (HasFactors(c.config) ? kFactorsSection : 0);
}

// One checked piece: length u64, then the bytes.
template <typename Emit>
absl::Status EmitBytes(std::string_view bytes, Emit& emit) {
  std::string section, piece;
  coding::PutFixed64(&section, bytes.size());
  section.append(bytes.data(), bytes.size());
  AppendChecked(&piece, section);
  return emit(piece);
}

// Calls emit() with each piece of the file in order: header, blocks, footer.
template <typename Emit>
absl::Status EmitSnapshot(const SnapshotContents& c, Emit&& emit) {
  const uint64_t count = CoordinateCount(c.state);
  const bool variants = !c.state.variants.empty();
  std::string piece(kMagic);
  coding::PutFixed32(&piece, FormatVersionFor(c));
  const std::string header = EncodeHeader(c, count);
  coding::PutFixed32(&piece, static_cast<uint32_t>(header.size()));
  AppendChecked(&piece, header);
  if (absl::Status s = emit(piece); !s.ok()) return s;
  if (absl::Status s = EmitCoordinateBlocks(c.state, emit); !s.ok()) return s;
  // Version 2: the dense block's state, one checked block (empty without one).
  std::string dense;
  coding::PutFixed64(&dense, c.state.dense_state.size());
  dense += c.state.dense_state;
  piece.clear();
  AppendChecked(&piece, dense);
  if (absl::Status s = emit(piece); !s.ok()) return s;
  const uint32_t version = FormatVersionFor(c);
  const uint32_t sections = SectionsOf(c);
  if (version >= 4) {
    std::string bits;
    coding::PutFixed32(&bits, sections);
    piece.clear();
    AppendChecked(&piece, bits);
    if (absl::Status s = emit(piece); !s.ok()) return s;
  }
  if (variants) {
    if (absl::Status s = EmitVariants(c.state, emit); !s.ok()) return s;
  }
  // Version 4: the impression join buffer (core/feedback/join_buffer.h),
  // the idempotency keys (core/persist/idempotency_window.h) and the online
  // calibration (core/eval/online_calibration.h).
  if (sections & kFeedbackSection) {
    if (absl::Status s = EmitBytes(c.feedback, emit); !s.ok()) return s;
  }
  if (sections & kIdempotencySection) {
    if (absl::Status s = EmitBytes(c.idempotency, emit); !s.ok()) return s;
  }
  if (sections & kCalibrationSection) {
    if (absl::Status s = EmitBytes(c.calibration, emit); !s.ok()) return s;
  }
  // The admission filters: the primary's, then each variant's in config
  // order, one checked piece each (empty for a policy without counts).
  if (sections & kAdmissionSection) {
    if (absl::Status s = EmitBytes(c.state.admission, emit); !s.ok()) return s;
    for (const Model::State& v : c.state.variants) {
      if (absl::Status s = EmitBytes(v.admission, emit); !s.ok()) return s;
    }
  }
  // The factor rows (Model::State::factors): their record size, then the
  // records; the model's if it has a factorization, then each factorized
  // variant's in config order, one checked piece each.
  if (sections & kFactorsSection) {
    auto emit_factors = [&](const Model::State& state) {
      std::string factors;
      coding::PutFixed32(&factors, state.factor_size);
      factors += state.factors;
      return EmitBytes(factors, emit);
    };
    if (c.config.factorization.enabled()) {
      if (absl::Status s = emit_factors(c.state); !s.ok()) return s;
    }
    for (size_t i = 0; i < c.config.variants.size(); ++i) {
      if (!c.config.variants[i].factorization.enabled()) continue;
      if (absl::Status s = emit_factors(c.state.variants[i]); !s.ok()) return s;
    }
  }
  piece.assign(kFooterMagic);
  std::string totals;
  coding::PutFixed64(&totals, count);
  AppendChecked(&piece, totals);
  return emit(piece);
}

}  // namespace

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

namespace {

// The steps of DecodeSnapshot, in file order.

// Reads the magic and the format version, and checks that this build can
// read that version.
absl::StatusOr<uint32_t> ReadFormatVersion(Decoder* in) {
  std::string_view magic;
  uint32_t version = 0;
  if (!in->GetBytes(kMagic.size(), &magic) || magic != kMagic) return Corrupt("bad magic");
  if (!in->GetFixed32(&version)) return Corrupt("truncated header");
  if (version > kSnapshotFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("snapshot format version ", version, " is newer than this build's ",
                     kSnapshotFormatVersion, "; upgrade clickd to read it"));
  }
  if (version == 0) return Corrupt("format version 0");
  return version;
}

// Reads the checked header into *out (config, log sequence, round, state
// size) and returns the coordinate count it announces, checked against the
// size of the whole file.
absl::StatusOr<uint64_t> ReadHeader(Decoder* in, size_t file_size, SnapshotContents* out) {
  uint32_t header_size = 0;
  std::string_view header;
  if (!in->GetFixed32(&header_size) || header_size > kMaxHeaderBytes ||
      !GetChecked(in, header_size, &header)) {
    return Corrupt("header checksum mismatch or truncated header");
  }
  // The config is followed by fixed fields: 8+8+8+8+4+8 bytes.
  constexpr size_t kFixedTail = 44;
  if (header.size() < kFixedTail) return Corrupt("header too short");
  auto config = DecodeModelConfig(header.substr(0, header.size() - kFixedTail));
  if (!config.ok()) return config.status();
  out->config = *std::move(config);
  Decoder tail(header.substr(header.size() - kFixedTail));
  uint64_t count = 0;
  tail.GetFixed64(&out->log_sequence);
  tail.GetFixed64(&out->state.round.t);
  tail.GetDouble(&out->state.round.sum_grad_norm_sq);
  tail.GetFixed64(&out->state.round.coordinates);
  tail.GetFixed32(&out->state.state_size);
  tail.GetFixed64(&count);
  if (out->state.state_size == 0 || out->state.state_size > kMaxStateSize) {
    return Corrupt("state size out of range");
  }
  const size_t record = sizeof(uint64_t) + out->state.state_size;
  if (count > file_size / record) return Corrupt("coordinate count exceeds the file size");
  return count;
}

// Reads the `count` coordinate records, in checked blocks, into *state
// (whose state_size the header has set).
absl::Status ReadCoordinateBlocks(Decoder* in, uint64_t count, Model::State* state) {
  const size_t record = sizeof(uint64_t) + state->state_size;
  state->coordinates.reserve(count * record);
  for (uint64_t read = 0; read < count;) {
    uint32_t n = 0;
    Decoder peek(in->remaining());
    // Every block but the last is full, as the writer makes them.
    const uint64_t expected = std::min<uint64_t>(kRecordsPerBlock, count - read);
    if (!peek.GetFixed32(&n) || n != expected) {
      return Corrupt(absl::StrCat("bad block after ", read, " coordinates"));
    }
    std::string_view block;
    if (!GetChecked(in, 4 + n * record, &block)) {
      return Corrupt(
          absl::StrCat("block checksum mismatch or truncated after ", read, " coordinates"));
    }
    state->coordinates.append(block.substr(4));
    read += n;
  }
  return absl::OkStatus();
}

// Reads the dense block's state (format version 2 on).
absl::Status ReadDenseState(Decoder* in, Model::State* state) {
  uint64_t dense_size = 0;
  std::string_view dense;
  Decoder peek(in->remaining());
  if (!peek.GetFixed64(&dense_size) || dense_size > in->remaining().size() ||
      !GetChecked(in, 8 + dense_size, &dense)) {
    return Corrupt("dense block checksum mismatch or truncated");
  }
  state->dense_state.assign(dense.substr(8));
  return absl::OkStatus();
}

// Reads the variants (format version 3 on): see EmitVariants.
absl::Status ReadVariants(Decoder* in, size_t file_size, Model::State* state) {
  std::string_view piece;
  uint32_t count = 0;
  if (!GetChecked(in, 4, &piece) || !Decoder(piece).GetFixed32(&count)) {
    return Corrupt("variant count checksum mismatch or truncated");
  }
  if (count == 0 || count > kMaxVariants) return Corrupt("variant count out of range");
  for (uint32_t i = 0; i < count; ++i) {
    Model::State v;
    uint64_t coordinates = 0;
    constexpr size_t kHeader = 4 + 8 + 8 + 8 + 8;
    if (!GetChecked(in, kHeader, &piece)) {
      return Corrupt(absl::StrCat("variant ", i + 1, ": header checksum mismatch or truncated"));
    }
    Decoder header(piece);
    header.GetFixed32(&v.state_size);
    header.GetFixed64(&v.round.t);
    header.GetDouble(&v.round.sum_grad_norm_sq);
    header.GetFixed64(&v.round.coordinates);
    header.GetFixed64(&coordinates);
    if (v.state_size == 0 || v.state_size > kMaxStateSize) {
      return Corrupt(absl::StrCat("variant ", i + 1, ": state size out of range"));
    }
    if (coordinates > file_size / (sizeof(uint64_t) + v.state_size)) {
      return Corrupt(absl::StrCat("variant ", i + 1, ": coordinate count exceeds the file size"));
    }
    if (absl::Status s = ReadCoordinateBlocks(in, coordinates, &v); !s.ok()) return s;
    state->variants.push_back(std::move(v));
  }
  uint32_t length = 0;
  Decoder peek(in->remaining());
  if (!peek.GetFixed32(&length) || length > in->remaining().size() ||
      !GetChecked(in, 4 + length, &piece)) {
    return Corrupt("variant selection checksum mismatch or truncated");
  }
  state->selection.assign(piece.substr(4));
  return absl::OkStatus();
}

// Reads one of version 4's byte sections (see EmitBytes).
absl::Status ReadBytes(Decoder* in, std::string_view what, std::string* bytes) {
  uint64_t length = 0;
  Decoder peek(in->remaining());
  std::string_view piece;
  if (!peek.GetFixed64(&length) || length > in->remaining().size() ||
      !GetChecked(in, 8 + length, &piece)) {
    return Corrupt(absl::StrCat(std::string(what), " checksum mismatch or truncated"));
  }
  bytes->assign(piece.substr(8));
  return absl::OkStatus();
}

// Reads version 4's section bits and checks them against the config: the
// join buffer is there exactly when the config has the loop; a calibration
// only when the config has one (a snapshot from before it was kept has none).
absl::StatusOr<uint32_t> ReadSections(Decoder* in, const ModelConfig& config) {
  std::string_view piece;
  uint32_t sections = 0;
  if (!GetChecked(in, 4, &piece) || !Decoder(piece).GetFixed32(&sections)) {
    return Corrupt("section bits checksum mismatch or truncated");
  }
  if ((sections & ~kKnownSections) != 0) {
    return Corrupt(absl::StrCat("section bits ", sections,
                                " name sections this build does not know (a newer build's?)"));
  }
  if (((sections & kFeedbackSection) != 0) != config.feedback.enabled() ||
      ((sections & kVariantsSection) != 0) != !config.variants.empty() ||
      ((sections & kCalibrationSection) != 0 && !config.calibration.enabled) ||
      ((sections & kAdmissionSection) != 0) != KeepsAdmissionState(config) ||
      ((sections & kFactorsSection) != 0) != HasFactors(config)) {
    return Corrupt("section bits do not match the model's config");
  }
  return sections;
}

// Reads the calibration section and checks that it restores a calibrator.
absl::Status ReadCalibration(Decoder* in, std::string* bytes) {
  if (absl::Status s = ReadBytes(in, "calibration", bytes); !s.ok()) return s;
  auto calibrator = OnlineCalibrator::Deserialize(*bytes);
  if (!calibrator.ok()) return Corrupt(std::string(calibrator.status().message()));
  return absl::OkStatus();
}

// Reads one admission filter's piece and checks that it decodes for
// `options` (empty exactly when the policy keeps no counts).
absl::Status ReadAdmission(Decoder* in, const AdmissionOptions& options, std::string_view what,
                           std::string* bytes) {
  if (absl::Status s = ReadBytes(in, what, bytes); !s.ok()) return s;
  const bool keeps = options.policy == AdmissionOptions::Policy::kBloom;
  if (keeps != !bytes->empty()) {
    return Corrupt(absl::StrCat(std::string(what), keeps ? " missing" : " unexpected"));
  }
  if (!keeps) return absl::OkStatus();
  auto admission = FeatureAdmission::Decode(options, *bytes);
  if (!admission.ok()) {
    return Corrupt(absl::StrCat(std::string(what), ": ", admission.status().message()));
  }
  return absl::OkStatus();
}

// Reads the admission section: the primary's filter, then each variant's.
absl::Status ReadAdmissions(Decoder* in, const ModelConfig& config, Model::State* state) {
  if (state->variants.size() != config.variants.size()) {
    return Corrupt("admission section: variant count differs from the config");
  }
  if (absl::Status s = ReadAdmission(in, config.admission, "admission filter", &state->admission);
      !s.ok()) {
    return s;
  }
  for (size_t i = 0; i < config.variants.size(); ++i) {
    if (absl::Status s = ReadAdmission(in, config.variants[i].admission,
                                       absl::StrCat("variant ", i + 1, " admission filter"),
                                       &state->variants[i].admission);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

// Reads one member's factor rows: the record size its factorization gives
// (a key and twice Factorization::row_floats() floats), then whole records.
absl::Status ReadMemberFactors(Decoder* in, const FactorizationConfig& f, Model::State* state) {
  std::string bytes;
  if (absl::Status s = ReadBytes(in, "factors", &bytes); !s.ok()) return s;
  Decoder piece(bytes);
  uint32_t factor_size = 0;
  if (!piece.GetFixed32(&factor_size)) return Corrupt("factors section truncated");
  const uint64_t floats = (FactorRowBytes(f) - sizeof(uint64_t)) / sizeof(float);
  const uint64_t record = sizeof(uint64_t) + factor_size;
  if (factor_size != floats * sizeof(float) || piece.remaining().size() % record != 0) {
    return Corrupt(absl::StrCat("factors section: ", factor_size, "-byte rows in ",
                                piece.remaining().size(), " bytes; the config's rows are ",
                                floats * sizeof(float), " bytes"));
  }
  state->factor_size = factor_size;
  state->factors.assign(piece.remaining());
  return absl::OkStatus();
}

// Reads the factors section: the model's rows if it has a factorization,
// then each factorized variant's.
absl::Status ReadFactors(Decoder* in, const ModelConfig& config, Model::State* state) {
  if (state->variants.size() != config.variants.size()) {
    return Corrupt("factors section: variant count differs from the config");
  }
  if (config.factorization.enabled()) {
    if (absl::Status s = ReadMemberFactors(in, config.factorization, state); !s.ok()) return s;
  }
  for (size_t i = 0; i < config.variants.size(); ++i) {
    if (!config.variants[i].factorization.enabled()) continue;
    if (absl::Status s =
            ReadMemberFactors(in, config.variants[i].factorization, &state->variants[i]);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

// Reads the footer, checks it repeats the header's count, and that nothing
// follows it.
absl::Status ReadFooter(Decoder* in, uint64_t count) {
  std::string_view footer_magic, totals;
  uint64_t footer_count = 0;
  if (!in->GetBytes(kFooterMagic.size(), &footer_magic) || footer_magic != kFooterMagic ||
      !GetChecked(in, 8, &totals) || !Decoder(totals).GetFixed64(&footer_count)) {
    return Corrupt("missing or damaged footer (truncated file?)");
  }
  if (footer_count != count) return Corrupt("footer count differs from the header");
  if (!in->remaining().empty()) return Corrupt("trailing bytes after the footer");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SnapshotContents> DecodeSnapshot(std::string_view bytes) {
  Decoder in(bytes);
  absl::StatusOr<uint32_t> version = ReadFormatVersion(&in);
  if (!version.ok()) return version.status();
  SnapshotContents out;
  absl::StatusOr<uint64_t> count = ReadHeader(&in, bytes.size(), &out);
  if (!count.ok()) return count.status();
  if (absl::Status s = ReadCoordinateBlocks(&in, *count, &out.state); !s.ok()) return s;
  if (*version >= 2) {
    if (absl::Status s = ReadDenseState(&in, &out.state); !s.ok()) return s;
  }
  // Version 3 always has variants; version 4 says which sections follow.
  uint32_t sections = *version == 3 ? kVariantsSection : 0;
  if (*version >= 4) {
    absl::StatusOr<uint32_t> bits = ReadSections(&in, out.config);
    if (!bits.ok()) return bits.status();
    sections = *bits;
  }
  if (sections & kVariantsSection) {
    if (absl::Status s = ReadVariants(&in, bytes.size(), &out.state); !s.ok()) return s;
  }
  if (sections & kFeedbackSection) {
    if (absl::Status s = ReadBytes(&in, "join buffer", &out.feedback); !s.ok()) return s;
  }
  if (sections & kIdempotencySection) {
    if (absl::Status s = ReadBytes(&in, "idempotency keys", &out.idempotency); !s.ok()) return s;
    if (out.idempotency.empty()) return Corrupt("empty idempotency keys section");
  }
  if (sections & kCalibrationSection) {
    if (absl::Status s = ReadCalibration(&in, &out.calibration); !s.ok()) return s;
  }
  if (sections & kAdmissionSection) {
    if (absl::Status s = ReadAdmissions(&in, out.config, &out.state); !s.ok()) return s;
  }
  if (sections & kFactorsSection) {
    if (absl::Status s = ReadFactors(&in, out.config, &out.state); !s.ok()) return s;
  }
  if (absl::Status s = ReadFooter(&in, *count); !s.ok()) return s;
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
