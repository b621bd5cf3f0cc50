#include "core/persist/snapshot.h"

#include <filesystem>
#include <random>

#include "absl/strings/match.h"
#include "core/base/coding.h"
#include "core/base/crc32c.h"
#include "core/eval/online_calibration.h"
#include "core/persist/fault_injection_env.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

std::unique_ptr<Model> TrainedModel(const ModelConfig& config, int n) {
  auto model = *CreateModel(config);
  std::mt19937 rng(3);
  std::vector<HashedFeature> fs;
  for (int i = 0; i < n; ++i) {
    Example e;
    e.namespaces.push_back({"u", {Feature::WithId(rng() % 300), Feature::Named("x", 0.5f)}});
    fs.clear();
    model->hasher().Hash(e, &fs);
    model->Learn(fs, rng() % 5 == 0 ? 1.0 : 0.0, 1.0);
  }
  return model;
}

SnapshotContents ContentsOf(const Model& model, uint64_t sequence) {
  return {model.config(), sequence, model.ExportState()};
}

std::string TempDir() {
  static int n = 0;
  const std::string dir = ::testing::TempDir() + "/snapshot_test_" + std::to_string(getpid()) +
                          "_" + std::to_string(n++);
  std::filesystem::remove_all(dir);  // PIDs repeat across runs
  EXPECT_TRUE(Env::Default()->CreateDirs(dir).ok());
  return dir;
}

TEST(Snapshot, RoundTripRestoresAnIdenticalModel) {
  ModelConfig config;
  config.name = "ctr";
  config.optimizer.type = OptimizerType::kAdagradDa;
  config.optimizer.adagrad.lambda = 0.001;
  config.hashing.interactions = {{"u", "u"}};
  config.hashing.bits = 20;
  auto model = TrainedModel(config, 3000);
  const std::string path = TempDir() + "/ctr.snap";
  ASSERT_TRUE(WriteSnapshot(Env::Default(), path, ContentsOf(*model, 77)).ok());
  auto read = ReadSnapshot(Env::Default(), path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->log_sequence, 77u);
  EXPECT_EQ(read->config.name, "ctr");
  EXPECT_EQ(read->config.hashing.interactions, config.hashing.interactions);
  EXPECT_EQ(read->config.optimizer.adagrad.lambda, 0.001);
  auto restored = *CreateModel(read->config);
  ASSERT_TRUE(restored->ImportState(read->state).ok());
  EXPECT_EQ(restored->SerializeState(), model->SerializeState());
  EXPECT_FALSE(Env::Default()->FileExists(path + ".tmp"));
}

// Every optimizer's parameters survive the config encoding (the MODEL file
// and snapshot headers), not only the ones version 1 knew.
TEST(ModelConfigEncoding, RoundTripsEveryOptimizersParams) {
  ModelConfig config;
  config.name = "pa";
  config.loss = LossType::kHinge;
  config.optimizer.type = OptimizerType::kPa;
  config.optimizer.pa.c = 0.25;
  config.optimizer.cw.eta = 0.9;
  config.optimizer.cw.a = 3.5;
  config.optimizer.metagrad_diag = {.diameter = 1.5, .gradient_bound = 0.75};
  config.optimizer.ftrl.alpha = 0.05;
  std::string bytes;
  EncodeModelConfig(config, &bytes);
  auto decoded = DecodeModelConfig(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->optimizer.type, OptimizerType::kPa);
  EXPECT_EQ(decoded->optimizer.pa.c, 0.25);
  EXPECT_EQ(decoded->optimizer.cw.eta, 0.9);
  EXPECT_EQ(decoded->optimizer.cw.a, 3.5);
  EXPECT_EQ(decoded->optimizer.metagrad_diag.diameter, 1.5);
  EXPECT_EQ(decoded->optimizer.metagrad_diag.gradient_bound, 0.75);
  EXPECT_EQ(decoded->optimizer.ftrl.alpha, 0.05);
  std::string again;
  EncodeModelConfig(*decoded, &again);
  EXPECT_EQ(again, bytes);
  // The selected optimizer's parameters too.
  config.name = "mg";
  config.loss = LossType::kLogistic;
  config.optimizer.type = OptimizerType::kMetaGradDiag;
  bytes.clear();
  EncodeModelConfig(config, &bytes);
  decoded = DecodeModelConfig(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->optimizer.type, OptimizerType::kMetaGradDiag);
  EXPECT_EQ(decoded->optimizer.metagrad_diag.diameter, 1.5);
  EXPECT_EQ(decoded->optimizer.metagrad_diag.gradient_bound, 0.75);
}

TEST(ModelConfigEncoding, RoundTripsAdmissionAndRefusesANonCanonicalOne) {
  ModelConfig config;
  config.admission.policy = AdmissionOptions::Policy::kPoisson;
  config.admission.probability = 0.03;
  std::string bytes;
  EncodeModelConfig(config, &bytes);
  auto decoded = DecodeModelConfig(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->admission.policy, AdmissionOptions::Policy::kPoisson);
  EXPECT_EQ(decoded->admission.probability, 0.03);
  // Policy "all" with a probability other than 1, or an unknown policy:
  // not an encoding this build writes.
  std::string all_with_p = bytes;
  // policy, probability, variant count, feedback (ttl, budget, policy),
  // calibration (enabled, half-life), memory budget, encoding, Bloom
  // parameters (min_count, counters, generation_sightings)
  all_with_p[all_with_p.size() - 80] = 0;
  EXPECT_EQ(DecodeModelConfig(all_with_p).status().code(), absl::StatusCode::kDataLoss);
  std::string unknown = bytes;
  unknown[unknown.size() - 80] = 3;
  EXPECT_EQ(DecodeModelConfig(unknown).status().code(), absl::StatusCode::kDataLoss);
}

// Versions 6 (no variants), 5 (no ftrl.decay) and 3 (no metagrad_diag parameters) still
// decode, with the defaults.
TEST(ModelConfigEncoding, ReadsVersionsFiveAndThree) {
  ModelConfig config;
  config.name = "ctr";
  config.optimizer.cw.a = 2.5;
  config.optimizer.metagrad_diag = {.diameter = 1.5, .gradient_bound = 0.75};
  config.optimizer.ftrl.decay = 0.99;
  std::string v11;
  EncodeModelConfig(config, &v11);
  ASSERT_EQ(v11[4], 11);
  // v10 = v11 with version 10 and without the Bloom filter parameters.
  std::string v10 = v11.substr(0, v11.size() - 20);
  v10[4] = 10;
  // v9 = v10 with version 9 and without the state encoding at the end.
  std::string v9 = v10.substr(0, v10.size() - 4);
  v9[4] = 9;
  // v8 = v9 with version 8 and without the memory budget at the end.
  std::string v8 = v9.substr(0, v9.size() - 8);
  v8[4] = 8;
  // v7 = v8 with version 7 and without the feedback and calibration
  // settings at the end.
  std::string v7 = v8.substr(0, v8.size() - 32);
  v7[4] = 7;
  // v6 = v7 with version 6 and without the variant count at the end.
  std::string v6 = v7.substr(0, v7.size() - 4);
  v6[4] = 6;
  auto decoded_v6 = DecodeModelConfig(v6);
  ASSERT_TRUE(decoded_v6.ok()) << decoded_v6.status();
  EXPECT_EQ(decoded_v6->optimizer.ftrl.decay, 0.99);
  // v5 = v6 with version 5 and without ftrl.decay after metagrad_diag's two
  // doubles; v4 = v5 with version 4 and without the admission policy and
  // probability at the end; v3 = v4 with version 3 and without the two
  // doubles after pa and cw's.
  const size_t pa_cw_end = 8 + 4 + config.name.size() + 4 + 4 + 12 * 8 + 3 * 8;
  std::string v5 = v6.substr(0, pa_cw_end + 2 * 8) + v6.substr(pa_cw_end + 3 * 8);
  v5[4] = 5;
  auto decoded_v5 = DecodeModelConfig(v5);
  ASSERT_TRUE(decoded_v5.ok()) << decoded_v5.status();
  EXPECT_EQ(decoded_v5->optimizer.ftrl.decay, 1.0);
  EXPECT_EQ(decoded_v5->optimizer.metagrad_diag.diameter, 1.5);
  std::string v4 = v5.substr(0, v5.size() - (4 + 8));
  v4[4] = 4;
  auto decoded_v4 = DecodeModelConfig(v4);
  ASSERT_TRUE(decoded_v4.ok()) << decoded_v4.status();
  EXPECT_EQ(decoded_v4->admission.policy, AdmissionOptions::Policy::kAll);
  EXPECT_EQ(decoded_v4->optimizer.metagrad_diag.diameter, 1.5);
  std::string v3 = v4.substr(0, pa_cw_end) + v4.substr(pa_cw_end + 2 * 8);
  ASSERT_EQ(v3[4], 4);
  v3[4] = 3;
  auto decoded = DecodeModelConfig(v3);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->optimizer.cw.a, 2.5);
  EXPECT_EQ(decoded->optimizer.metagrad_diag.diameter, MetaGradDiagParams{}.diameter);
  EXPECT_EQ(decoded->optimizer.metagrad_diag.gradient_bound, MetaGradDiagParams{}.gradient_bound);
  EXPECT_EQ(decoded->hashing.bias, config.hashing.bias);
  EXPECT_EQ(decoded->num_shards, config.num_shards);
  // Re-encoded, it is the current version.
  std::string again;
  EncodeModelConfig(*decoded, &again);
  EXPECT_EQ(again[4], 11);
}

TEST(ModelConfigEncoding, RoundTripsTheFeedbackLoopAndRefusesOutOfRange) {
  ModelConfig config;
  config.feedback.ttl_seconds = 3600;
  config.feedback.max_buffer_bytes = 1 << 20;
  config.feedback.policy = FeedbackConfig::Policy::kFakeNegativeWeighted;
  std::string bytes;
  EncodeModelConfig(config, &bytes);
  auto decoded = DecodeModelConfig(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->feedback.ttl_seconds, 3600);
  EXPECT_EQ(decoded->feedback.max_buffer_bytes, uint64_t{1} << 20);
  EXPECT_EQ(decoded->feedback.policy, FeedbackConfig::Policy::kFakeNegativeWeighted);
  std::string bad_policy = bytes;
  // Counted from the end, past version 11's 20 bytes of Bloom parameters.
  bad_policy[bad_policy.size() - 48] = 9;
  EXPECT_EQ(DecodeModelConfig(bad_policy).status().code(), absl::StatusCode::kDataLoss);
  std::string bad_ttl = bytes;
  bad_ttl[bad_ttl.size() - 57] = 0x7f;  // the TTL's high byte
  EXPECT_EQ(DecodeModelConfig(bad_ttl).status().code(), absl::StatusCode::kDataLoss);
  config.calibration = {.enabled = true, .half_life = 5e4};
  bytes.clear();
  EncodeModelConfig(config, &bytes);
  decoded = DecodeModelConfig(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(decoded->calibration.enabled);
  EXPECT_EQ(decoded->calibration.half_life, 5e4);
  bad_ttl = bytes;
  bad_ttl[bad_ttl.size() - 44] = 2;  // enabled is 0 or 1
  EXPECT_EQ(DecodeModelConfig(bad_ttl).status().code(), absl::StatusCode::kDataLoss);
}

// Version 1 (no marker, no parameters of later optimizers) still decodes:
// MODEL files written before version 2.
TEST(ModelConfigEncoding, ReadsVersionOne) {
  ModelConfig config;
  config.name = "ctr";
  config.optimizer.ftrl.alpha = 0.07;
  config.hashing.interactions = {{"u", "ad"}};
  std::string v2;
  EncodeModelConfig(config, &v2);
  // v1 = the current encoding without the marker and version (8 bytes),
  // without the six doubles after the twelve of version 1 (versions 2, 4
  // and 6), and without version 3's dense block config (count, type, 5 doubles,
  // tau), version 5's admission (policy, probability), version 7's
  // variant count, version 8's feedback and calibration settings and
  // version 9's memory budget, version 10's state encoding and version
  // 11's Bloom filter parameters at the end.
  const size_t twelve_end = 8 + 4 + config.name.size() + 4 + 4 + 12 * 8;
  constexpr size_t kDenseTail =
      4 + 4 + 5 * 8 + 4 + (4 + 8) + 4 + (8 + 8 + 4) + (4 + 8) + 8 + 4 + 20;
  const std::string v1 =
      v2.substr(8, twelve_end - 8) +
      v2.substr(twelve_end + 6 * 8, v2.size() - kDenseTail - (twelve_end + 6 * 8));
  auto decoded = DecodeModelConfig(v1);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->optimizer.ftrl.alpha, 0.07);
  EXPECT_EQ(decoded->hashing.interactions, config.hashing.interactions);
  EXPECT_EQ(decoded->optimizer.pa.c, PaParams{}.c);
  // A version-1 config cannot name an optimizer that came later.
  std::string pa_v1 = v1;
  pa_v1[4 + config.name.size() + 4] = static_cast<char>(OptimizerType::kPa);
  EXPECT_EQ(DecodeModelConfig(pa_v1).status().code(), absl::StatusCode::kDataLoss);
  // An unknown encoding version is refused.
  std::string v12 = v2;
  v12[4] = 12;
  EXPECT_EQ(DecodeModelConfig(v12).status().code(), absl::StatusCode::kDataLoss);
}

TEST(Snapshot, EmptyModelAndManyBlocks) {
  auto empty = *CreateModel(ModelConfig{});
  auto decoded = DecodeSnapshot(EncodeSnapshot(ContentsOf(*empty, 0)));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(decoded->state.coordinates.empty());
  // More than one 65,536-coordinate block.
  Model::State big;
  big.state_size = 8;
  for (uint64_t k = 0; k < 140000; ++k)
    big.coordinates.append(reinterpret_cast<char*>(&k), 8).append(8, 'x');
  SnapshotContents c{ModelConfig{}, 5, big};
  auto again = DecodeSnapshot(EncodeSnapshot(c));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->state.coordinates, big.coordinates);
}

// Every single corrupted byte and every truncation is detected: a snapshot
// is never loaded silently when damaged.
TEST(Snapshot, EveryFlippedByteAndTruncationIsDetected) {
  auto model = TrainedModel(ModelConfig{}, 200);
  const std::string bytes = EncodeSnapshot(ContentsOf(*model, 9));
  ASSERT_TRUE(DecodeSnapshot(bytes).ok());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] ^= 0x20;
    const auto s = DecodeSnapshot(damaged).status();
    EXPECT_FALSE(s.ok()) << "flip at " << i;
    EXPECT_TRUE(s.code() == absl::StatusCode::kDataLoss ||
                s.code() == absl::StatusCode::kFailedPrecondition)
        << s;
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(DecodeSnapshot(bytes.substr(0, n)).status().code(), absl::StatusCode::kDataLoss)
        << "truncated to " << n;
  }
  EXPECT_EQ(DecodeSnapshot(bytes + "x").status().code(), absl::StatusCode::kDataLoss);
}

ModelConfig WithVariants() {
  ModelConfig config;
  config.variants.push_back({"fast", {}});
  config.variants.back().optimizer.ftrl.alpha = 0.5;
  config.variants.push_back({"ada", {}});
  config.variants.back().optimizer.type = OptimizerType::kAdagrad;
  config.variants.back().admission = {.policy = AdmissionOptions::Policy::kPoisson,
                                      .probability = 0.5};
  return config;
}

// A model with variants is written as version 3 (each variant's state and
// the champion selection after the dense block); it restores into an equal
// model. Without variants the file is still version 2.
TEST(Snapshot, VariantsRoundTripAsVersionThree) {
  auto model = TrainedModel(WithVariants(), 300);
  const std::string bytes = EncodeSnapshot(ContentsOf(*model, 4));
  EXPECT_EQ(bytes[8], 3);
  auto decoded = DecodeSnapshot(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->state.variants.size(), 2u);
  EXPECT_EQ(decoded->config.variants.size(), 2u);
  EXPECT_EQ(decoded->config.variants[1].admission.probability, 0.5);
  EXPECT_EQ(decoded->config.variants[0].optimizer.ftrl.alpha, 0.5);
  auto restored = *CreateModel(decoded->config);
  ASSERT_TRUE(restored->ImportState(decoded->state).ok());
  EXPECT_EQ(restored->SerializeState(), model->SerializeState());
  EXPECT_EQ(EncodeSnapshot(ContentsOf(*TrainedModel(ModelConfig{}, 10), 1))[8], 2);
  // A state whose variants do not match the model's is refused whole.
  auto plain = *CreateModel(ModelConfig{});
  EXPECT_EQ(plain->ImportState(decoded->state).code(), absl::StatusCode::kDataLoss);
  auto fewer_config = WithVariants();
  fewer_config.variants.pop_back();
  auto fewer = *CreateModel(fewer_config);
  EXPECT_EQ(fewer->ImportState(decoded->state).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(fewer->SerializeState(), (*CreateModel(fewer_config))->SerializeState());
}

TEST(Snapshot, EveryFlippedByteAndTruncationOfVariantsIsDetected) {
  auto model = TrainedModel(WithVariants(), 50);
  const std::string bytes = EncodeSnapshot(ContentsOf(*model, 9));
  ASSERT_TRUE(DecodeSnapshot(bytes).ok());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] ^= 0x20;
    const auto s = DecodeSnapshot(damaged).status();
    EXPECT_TRUE(s.code() == absl::StatusCode::kDataLoss ||
                s.code() == absl::StatusCode::kFailedPrecondition)
        << "flip at " << i << ": " << s;
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(DecodeSnapshot(bytes.substr(0, n)).status().code(), absl::StatusCode::kDataLoss)
        << "truncated to " << n;
  }
}

// Format 4: a model with the impression-to-click loop and idempotency keys
// (the sections' bytes are opaque here: their own decoders check them).
TEST(Snapshot, EveryFlippedByteAndTruncationOfFormatFourIsDetected) {
  ModelConfig config;
  config.feedback.ttl_seconds = 60;
  auto model = TrainedModel(config, 50);
  SnapshotContents contents = ContentsOf(*model, 9);
  contents.feedback = "join buffer bytes";
  contents.idempotency = "idempotency bytes";
  const std::string bytes = EncodeSnapshot(contents);
  ASSERT_EQ(bytes[8], 4);
  auto decoded = DecodeSnapshot(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->feedback, contents.feedback);
  EXPECT_EQ(decoded->idempotency, contents.idempotency);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] ^= 0x20;
    const auto s = DecodeSnapshot(damaged).status();
    EXPECT_TRUE(s.code() == absl::StatusCode::kDataLoss ||
                s.code() == absl::StatusCode::kFailedPrecondition)
        << "flip at " << i << ": " << s;
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(DecodeSnapshot(bytes.substr(0, n)).status().code(), absl::StatusCode::kDataLoss)
        << "truncated to " << n;
  }
  // Keys alone (a model without the loop) are format 4 too; no keys and no
  // loop is format 2.
  contents = ContentsOf(*TrainedModel(ModelConfig{}, 5), 3);
  EXPECT_EQ(EncodeSnapshot(contents)[8], 2);
  contents.idempotency = "keys";
  const std::string keys_only = EncodeSnapshot(contents);
  EXPECT_EQ(keys_only[8], 4);
  EXPECT_EQ(DecodeSnapshot(keys_only)->idempotency, "keys");
}

// The bytes of a calibrator that has seen `n` progressive predictions.
std::string CalibrationBytes(int n) {
  auto calibrator = *OnlineCalibrator::Create({});
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(calibrator.Add(0.01 + (i % 50) / 100.0, i % 4 == 0 ? 1 : 0).ok());
  }
  return calibrator.Serialize();
}

// `bytes` (format 4) with its section bits set to `bits` and their CRC
// recomputed. They follow the dense block, so they sit where the footer of
// the same model's version 2 file (`plain`) starts.
std::string WithSectionBits(std::string bytes, const std::string& plain, uint32_t bits) {
  constexpr size_t kFooter = 8 + 8 + 4;
  std::string piece;
  coding::PutFixed32(&piece, bits);
  coding::PutFixed32(&piece, crc32c::Mask(crc32c::Value(piece.data(), 4)));
  return bytes.replace(plain.size() - kFooter, piece.size(), piece);
}

// A model with calibration enabled keeps its calibrator in format 4's
// section 8; without one (an older build's snapshot) it decodes to none,
// and the bytes of a model without calibration are never written.
TEST(Snapshot, CalibrationRoundTripsInItsSection) {
  ModelConfig config;
  config.calibration.enabled = true;
  SnapshotContents contents = ContentsOf(*TrainedModel(config, 50), 9);
  const std::string plain = EncodeSnapshot(contents);
  EXPECT_EQ(plain[8], 2);
  EXPECT_EQ(DecodeSnapshot(plain)->calibration, "");
  contents.calibration = CalibrationBytes(300);
  const std::string bytes = EncodeSnapshot(contents);
  EXPECT_EQ(bytes[8], 4);
  auto decoded = DecodeSnapshot(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->calibration, contents.calibration);
  EXPECT_EQ(EncodeSnapshot(*decoded), bytes);
  // With the loop and keys too: every section in its place.
  contents.config.feedback.ttl_seconds = 60;
  contents.feedback = "join buffer bytes";
  contents.idempotency = "keys";
  decoded = DecodeSnapshot(EncodeSnapshot(contents));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->feedback, "join buffer bytes");
  EXPECT_EQ(decoded->idempotency, "keys");
  EXPECT_EQ(decoded->calibration, contents.calibration);

  SnapshotContents uncalibrated = ContentsOf(*TrainedModel(ModelConfig{}, 50), 9);
  const std::string today = EncodeSnapshot(uncalibrated);
  uncalibrated.calibration = CalibrationBytes(300);
  EXPECT_EQ(EncodeSnapshot(uncalibrated), today);
}

TEST(Snapshot, DamagedCalibrationIsDataLossNamingIt) {
  ModelConfig config;
  config.calibration.enabled = true;
  SnapshotContents contents = ContentsOf(*TrainedModel(config, 50), 9);
  contents.calibration = CalibrationBytes(300);
  const std::string bytes = EncodeSnapshot(contents);
  // The section (length u64, bytes, crc) comes last, before the footer.
  const size_t section = contents.calibration.size() + 8 + 4;
  const size_t first = bytes.size() - 20 - section;
  for (size_t i = first; i < first + section; ++i) {
    std::string damaged = bytes;
    damaged[i] ^= 0x10;
    const auto s = DecodeSnapshot(damaged).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << "flip at " << i;
    EXPECT_TRUE(absl::StrContains(s.message(), "calibration")) << s;
  }
  for (size_t n = first; n < first + section; ++n) {
    EXPECT_EQ(DecodeSnapshot(bytes.substr(0, n)).status().code(), absl::StatusCode::kDataLoss)
        << "truncated to " << n;
  }
  // A section whose own CRC holds, but whose bytes are no calibration.
  contents.calibration = "not a calibration";
  EXPECT_EQ(DecodeSnapshot(EncodeSnapshot(contents)).status().message(),
            "snapshot is corrupt: calibration state is corrupt: checksum mismatch or truncated");
}

// Bit 8 is refused on a model whose config has no calibration, and so is
// any bit this build does not know: a newer build's section is never
// skipped. (Builds before bit 8 refused it the same way: bits above 7.)
TEST(Snapshot, SectionBitsRefuseCalibrationWithoutTheConfigAndUnknownSections) {
  ModelConfig config;
  SnapshotContents contents = ContentsOf(*TrainedModel(config, 20), 5);
  const std::string plain = EncodeSnapshot(contents);
  // The keys section has the calibration's layout: only its bit differs.
  contents.idempotency = CalibrationBytes(10);
  const std::string keys = EncodeSnapshot(contents);
  ASSERT_EQ(keys[8], 4);
  ASSERT_TRUE(DecodeSnapshot(WithSectionBits(keys, plain, 4)).ok());
  EXPECT_EQ(DecodeSnapshot(WithSectionBits(keys, plain, 8)).status().message(),
            "snapshot is corrupt: section bits do not match the model's config");

  config.calibration.enabled = true;
  contents = ContentsOf(*TrainedModel(config, 20), 5);
  const std::string calibrated_plain = EncodeSnapshot(contents);
  contents.calibration = CalibrationBytes(10);
  const std::string calibrated = EncodeSnapshot(contents);
  auto as_keys = DecodeSnapshot(WithSectionBits(calibrated, calibrated_plain, 4));
  ASSERT_TRUE(as_keys.ok()) << as_keys.status();
  EXPECT_EQ(as_keys->idempotency, contents.calibration);
  const auto unknown =
      DecodeSnapshot(WithSectionBits(calibrated, calibrated_plain, 8 | 64)).status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(unknown.message(),
            "snapshot is corrupt: section bits 72 name sections this build does not know (a "
            "newer build's?)");
}

ModelConfig BloomConfig() {
  ModelConfig config;
  config.admission.policy = AdmissionOptions::Policy::kBloom;
  config.admission.min_count = 3;
  config.admission.counters = 1 << 10;
  config.admission.generation_sightings = 400;
  return config;
}

TEST(ModelConfigEncoding, RoundTripsTheBloomFilterParameters) {
  ModelConfig config = BloomConfig();
  config.variants.push_back({"b"});
  config.variants[0].admission = config.admission;
  config.variants[0].admission.min_count = 2;
  std::string bytes;
  EncodeModelConfig(config, &bytes);
  auto decoded = DecodeModelConfig(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  for (const auto& [got, want] :
       {std::pair{decoded->admission, config.admission},
        std::pair{decoded->variants[0].admission, config.variants[0].admission}}) {
    EXPECT_EQ(got.policy, AdmissionOptions::Policy::kBloom);
    EXPECT_EQ(got.min_count, want.min_count);
    EXPECT_EQ(got.counters, want.counters);
    EXPECT_EQ(got.generation_sightings, want.generation_sightings);
  }
  std::string again;
  EncodeModelConfig(*decoded, &again);
  EXPECT_EQ(again, bytes);
}

// A Bloom model's filter rides in the admission section: the restored model
// is the model, and any damage to the section is DataLoss.
TEST(Snapshot, BloomFilterRoundTripsAndDamageIsDataLoss) {
  auto model = TrainedModel(BloomConfig(), 600);
  ASSERT_GT(model->Stats().admission_sightings, model->Stats().admission_admitted);
  const SnapshotContents contents = ContentsOf(*model, 4);
  ASSERT_FALSE(contents.state.admission.empty());
  const std::string bytes = EncodeSnapshot(contents);
  EXPECT_EQ(bytes[8], 4);
  auto decoded = DecodeSnapshot(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->state.admission, contents.state.admission);
  auto restored = *CreateModel(decoded->config);
  ASSERT_TRUE(restored->ImportState(decoded->state).ok());
  EXPECT_EQ(restored->SerializeState(), model->SerializeState());
  // The section (length u64, bytes, crc) comes last, before the footer.
  const size_t section = contents.state.admission.size() + 8 + 4;
  const size_t first = bytes.size() - 20 - section;
  for (size_t i = first; i < first + section; i += 7) {
    std::string damaged = bytes;
    damaged[i] ^= 0x08;
    const auto s = DecodeSnapshot(damaged).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << "flip at " << i;
    EXPECT_TRUE(absl::StrContains(s.message(), "admission filter")) << s;
  }
  // A section whose CRC holds but whose bytes are no filter.
  SnapshotContents bad = contents;
  bad.state.admission = "not a filter";
  const auto s = DecodeSnapshot(EncodeSnapshot(bad)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(absl::StrContains(s.message(), "admission filter")) << s;
  // A model without the filter keeps writing format 2.
  EXPECT_EQ(EncodeSnapshot(ContentsOf(*TrainedModel(ModelConfig{}, 5), 3))[8], 2);
}

// A model with factors (docs/factorization.md) writes format 4 with the
// factors section: the restored model is the model, the section's damage
// is DataLoss naming it, and its bit must agree with the config.
TEST(Snapshot, FactorsRoundTripInTheirSectionAndDamageIsDataLoss) {
  ModelConfig config;
  config.factorization.kind = FactorizationConfig::Kind::kFfm;
  config.factorization.fields = {"u"};
  auto model = TrainedModel(config, 600);
  const SnapshotContents contents = ContentsOf(*model, 4);
  ASSERT_FALSE(contents.state.factors.empty());
  const std::string bytes = EncodeSnapshot(contents);
  EXPECT_EQ(bytes[8], 4);
  auto decoded = DecodeSnapshot(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->state.factors, contents.state.factors);
  auto restored = *CreateModel(decoded->config);
  ASSERT_TRUE(restored->ImportState(decoded->state).ok());
  EXPECT_EQ(restored->SerializeState(), model->SerializeState());
  // The section (length u64, record size u32, records, crc) comes last,
  // before the footer.
  const size_t section = contents.state.factors.size() + 8 + 4 + 4;
  const size_t first = bytes.size() - 20 - section;
  for (size_t i = first; i < first + section; i += 13) {
    std::string damaged = bytes;
    damaged[i] ^= 0x08;
    const auto s = DecodeSnapshot(damaged).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << "flip at " << i;
    EXPECT_TRUE(absl::StrContains(s.message(), "factors")) << s;
  }
  // Rows of another size than the config's, behind a valid CRC.
  SnapshotContents bad = contents;
  bad.state.factor_size += 4;
  const auto s = DecodeSnapshot(EncodeSnapshot(bad)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(absl::StrContains(s.message(), "factors section")) << s;
  // The same state under a config without factors is written as format 2
  // without them; a model with no rows yet has an empty section.
  SnapshotContents linear = contents;
  linear.config.factorization = FactorizationConfig{};
  linear.state.factors.clear();
  linear.state.factor_size = 0;
  EXPECT_EQ(EncodeSnapshot(linear)[8], 2);
  SnapshotContents zero = contents;
  zero.state.factors.clear();
  const std::string empty_section = EncodeSnapshot(zero);
  EXPECT_TRUE(DecodeSnapshot(empty_section).ok());
}

// A linear model with an FFM variant and an FM one (and a linear one):
// the section holds each factorized variant's rows in config order, the
// restored model is the model (config encoding version 18), and a model
// without them cannot take the state.
TEST(Snapshot, VariantsFactorsRoundTripInTheSection) {
  ModelConfig config;
  config.variants.push_back({"ffm", {}});
  config.variants.back().factorization.kind = FactorizationConfig::Kind::kFfm;
  config.variants.back().factorization.fields = {"u"};
  config.variants.push_back({"linear", {}});
  config.variants.back().optimizer.ftrl.alpha = 0.5;
  config.variants.push_back({"fm", {}});
  config.variants.back().factorization.kind = FactorizationConfig::Kind::kFm;
  config.variants.back().factorization.fields = {"u"};
  config.variants.back().factorization.dim = 2;
  auto model = TrainedModel(config, 600);
  const SnapshotContents contents = ContentsOf(*model, 4);
  ASSERT_TRUE(contents.state.factors.empty());
  ASSERT_EQ(contents.state.variants.size(), 3u);
  ASSERT_FALSE(contents.state.variants[0].factors.empty());
  ASSERT_TRUE(contents.state.variants[1].factors.empty());
  ASSERT_FALSE(contents.state.variants[2].factors.empty());
  const std::string bytes = EncodeSnapshot(contents);
  EXPECT_EQ(bytes[8], 4);
  auto decoded = DecodeSnapshot(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->config.variants[0].factorization.kind, FactorizationConfig::Kind::kFfm);
  EXPECT_EQ(decoded->config.variants[2].factorization.dim, 2);
  EXPECT_EQ(decoded->state.variants[0].factors, contents.state.variants[0].factors);
  EXPECT_EQ(decoded->state.variants[2].factors, contents.state.variants[2].factors);
  auto restored = *CreateModel(decoded->config);
  ASSERT_TRUE(restored->ImportState(decoded->state).ok());
  EXPECT_EQ(restored->SerializeState(), model->SerializeState());
  // The variants' factors count in the digest: another model's differ.
  auto other = TrainedModel(config, 599);
  EXPECT_NE(other->SerializeState(), model->SerializeState());
  // Every flip in the last section (the FM variant's rows) is detected.
  const size_t section = contents.state.variants[2].factors.size() + 8 + 4 + 4;
  const size_t first = bytes.size() - 20 - section;
  for (size_t i = first; i < first + section; i += 7) {
    std::string damaged = bytes;
    damaged[i] ^= 0x08;
    EXPECT_EQ(DecodeSnapshot(damaged).status().code(), absl::StatusCode::kDataLoss) << i;
  }
}

// A model with a TTL: its config is written in encoding version 12 (one
// without stays 11), and its states carry their stamps (12-byte FTRL
// states), so its snapshot restores the model that learned, stamps and all.
TEST(Snapshot, TtlStampsRoundTrip) {
  ModelConfig config;
  config.memory.ttl_rounds = 200;
  config.variants.push_back({"fast", {}, {}});
  config.variants[0].optimizer.ftrl.alpha = 0.5;
  auto model = TrainedModel(config, 900);
  ASSERT_GT(model->Stats().coordinates_expired, 0u);
  const SnapshotContents contents = ContentsOf(*model, 4);
  EXPECT_EQ(contents.state.state_size, 12u);
  std::string config_bytes;
  EncodeModelConfig(config, &config_bytes);
  EXPECT_EQ(config_bytes[4], 12);
  ModelConfig without = config;
  without.memory.ttl_rounds = 0;
  config_bytes.clear();
  EncodeModelConfig(without, &config_bytes);
  EXPECT_EQ(config_bytes[4], 11);

  const std::string bytes = EncodeSnapshot(contents);
  EXPECT_EQ(bytes[8], 3);  // the variants; a TTL needs no section of its own
  auto decoded = DecodeSnapshot(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->config.memory.ttl_rounds, 200u);
  auto restored = *CreateModel(decoded->config);
  ASSERT_TRUE(restored->ImportState(decoded->state).ok());
  EXPECT_EQ(restored->SerializeState(), model->SerializeState());
}

TEST(Snapshot, NewerFormatVersionIsRefusedClearly) {
  auto model = TrainedModel(ModelConfig{}, 10);
  std::string bytes = EncodeSnapshot(ContentsOf(*model, 1));
  bytes[8] = kSnapshotFormatVersion + 1;  // the version field follows the 8-byte magic
  const auto s = DecodeSnapshot(bytes).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "snapshot format version 5 is newer than this build's 4; upgrade clickd "
            "to read it");
}

TEST(Snapshot, FailedWriteLeavesThePreviousSnapshotAndNoTemp) {
  FaultInjectionEnv env(Env::Default());
  auto model = TrainedModel(ModelConfig{}, 500);
  const std::string path = TempDir() + "/m.snap";
  ASSERT_TRUE(WriteSnapshot(&env, path, ContentsOf(*model, 1)).ok());
  const std::string before = *ReadWholeFile(&env, path);
  auto later = TrainedModel(ModelConfig{}, 900);

  env.SetWriteBudget(100);  // a full disk: a short write, then ENOSPC
  absl::Status s = WriteSnapshot(&env, path, ContentsOf(*later, 2));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(*ReadWholeFile(&env, path), before);
  EXPECT_FALSE(env.FileExists(path + ".tmp"));

  env.SetWriteBudget(-1);
  env.SetSyncFails(true);
  EXPECT_FALSE(WriteSnapshot(&env, path, ContentsOf(*later, 2)).ok());
  EXPECT_EQ(*ReadWholeFile(&env, path), before);
  EXPECT_FALSE(env.FileExists(path + ".tmp"));

  env.SetSyncFails(false);
  env.SetRenameFails(true);
  EXPECT_FALSE(WriteSnapshot(&env, path, ContentsOf(*later, 2)).ok());
  EXPECT_EQ(*ReadWholeFile(&env, path), before);
  env.SetRenameFails(false);
  ASSERT_TRUE(WriteSnapshot(&env, path, ContentsOf(*later, 2)).ok());
  EXPECT_EQ(ReadSnapshot(&env, path)->log_sequence, 2u);
}

TEST(FaultInjectionEnv, DropUnsyncedDataKeepsOnlySyncedBytes) {
  FaultInjectionEnv env(Env::Default());
  const std::string path = TempDir() + "/log";
  auto file = *env.NewWritableFile(path, false);
  ASSERT_TRUE(file->Append("synced").ok());
  ASSERT_TRUE(file->Sync().ok());
  ASSERT_TRUE(file->Append("-lost").ok());
  ASSERT_TRUE(file->Close().ok());
  EXPECT_EQ(*ReadWholeFile(&env, path), "synced-lost");
  ASSERT_TRUE(env.DropUnsyncedData().ok());
  EXPECT_EQ(*ReadWholeFile(&env, path), "synced");
}

TEST(Model, ImportRejectsAnotherOptimizersState) {
  auto ftrl = TrainedModel(ModelConfig{}, 50);
  ModelConfig sgd;
  sgd.optimizer.type = OptimizerType::kSgd;  // 4-byte state, FTRL's is 8
  auto other = *CreateModel(sgd);
  EXPECT_EQ(other->ImportState(ftrl->ExportState()).code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace clickd
