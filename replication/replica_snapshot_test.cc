#include "replication/replica_snapshot.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "core/base/coding.h"
#include "core/base/crc32c.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

// A model named `name` that learned `n` examples, as a replica holds it.
ReplicaModel TrainedModel(const std::string& name, OptimizerType type, int n,
                          uint64_t created_sequence, uint64_t last_applied) {
  ModelConfig config;
  config.name = name;
  config.optimizer.type = type;
  config.hashing.bits = 18;
  config.num_shards = 4;
  auto model = CreateModel(config);
  EXPECT_TRUE(model.ok()) << model.status();
  std::mt19937 rng(static_cast<uint32_t>(n));
  std::vector<HashedFeature> fs;
  for (int i = 0; i < n; ++i) {
    Example e;
    e.namespaces.push_back({"u", {Feature::WithId(rng() % 40), Feature::Named("x", 0.5f)}});
    fs.clear();
    (*model)->hasher().Hash(e, &fs);
    (*model)->Learn(fs, rng() % 4 == 0 ? 1.0 : 0.0, 1.0);
  }
  return {created_sequence, {config, last_applied, (*model)->ExportState()}};
}

ReplicaSnapshot ThreeModels() {
  ReplicaSnapshot snapshot;
  snapshot.sequence = 120;
  // Deliberately out of name order: the encoder sorts.
  snapshot.models.push_back(TrainedModel("zeta", OptimizerType::kFtrl, 30, 7, 118));
  snapshot.models.push_back(TrainedModel("alpha", OptimizerType::kAdagradDa, 20, 3, 120));
  snapshot.models.push_back(TrainedModel("mid", OptimizerType::kFtrl, 0, 90, 90));
  return snapshot;
}

std::string SerializedModel(const SnapshotContents& contents) {
  auto model = CreateModel(contents.config);
  EXPECT_TRUE(model.ok()) << model.status();
  absl::Status imported = (*model)->ImportState(contents.state);
  EXPECT_TRUE(imported.ok()) << imported;
  return (*model)->SerializeState();
}

// Replaces the bundle's trailing CRC with the right one for the rest.
void Reseal(std::string* bytes) {
  bytes->resize(bytes->size() - 4);
  coding::PutFixed32(bytes, crc32c::Mask(crc32c::Value(bytes->data(), bytes->size())));
}

TEST(ReplicaSnapshot, RoundTripRestoresEveryModelInNameOrder) {
  const ReplicaSnapshot original = ThreeModels();
  auto decoded = DecodeReplicaSnapshot(EncodeReplicaSnapshot(original));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->sequence, 120u);
  ASSERT_EQ(decoded->models.size(), 3u);
  const std::vector<std::pair<std::string, size_t>> expected = {
      {"alpha", 1}, {"mid", 2}, {"zeta", 0}};
  for (size_t i = 0; i < expected.size(); ++i) {
    const ReplicaModel& got = decoded->models[i];
    const ReplicaModel& want = original.models[expected[i].second];
    EXPECT_EQ(got.contents.config.name, expected[i].first);
    EXPECT_EQ(got.created_sequence, want.created_sequence);
    EXPECT_EQ(got.contents.log_sequence, want.contents.log_sequence);
    EXPECT_EQ(got.contents.config.optimizer.type, want.contents.config.optimizer.type);
    EXPECT_EQ(SerializedModel(got.contents), SerializedModel(want.contents));
  }
  // Encoding is canonical: the decoded bundle encodes to the same bytes.
  EXPECT_EQ(EncodeReplicaSnapshot(*decoded), EncodeReplicaSnapshot(original));
}

TEST(ReplicaSnapshot, EmptyBundleRoundTrips) {
  ReplicaSnapshot empty;
  empty.sequence = 5;
  auto decoded = DecodeReplicaSnapshot(EncodeReplicaSnapshot(empty));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->sequence, 5u);
  EXPECT_TRUE(decoded->models.empty());
}

TEST(ReplicaSnapshot, TheLogChainRoundTripsAndAVersion1BundleHasNone) {
  ReplicaSnapshot with_chain;
  with_chain.sequence = 9;
  with_chain.chain = LogDigest{0x1234, 0x5678};
  auto decoded = DecodeReplicaSnapshot(EncodeReplicaSnapshot(with_chain));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_TRUE(decoded->chain.has_value());
  EXPECT_EQ(*decoded->chain, (LogDigest{0x1234, 0x5678}));
  // A version 1 bundle (before chains): magic, version, sequence, count, crc.
  std::string v1 = "CLKDREP1";
  coding::PutFixed32(&v1, 1);
  coding::PutFixed64(&v1, 7);
  coding::PutFixed32(&v1, 0);
  coding::PutFixed32(&v1, crc32c::Mask(crc32c::Value(v1.data(), v1.size())));
  auto old = DecodeReplicaSnapshot(v1);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->sequence, 7u);
  EXPECT_FALSE(old->chain.has_value());
}

TEST(ReplicaSnapshot, EverySingleByteCorruptionIsDataLoss) {
  const std::string bytes = EncodeReplicaSnapshot(ThreeModels());
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (unsigned char flip : {0x01, 0x80, 0xFF}) {
      std::string damaged = bytes;
      damaged[i] = static_cast<char>(damaged[i] ^ flip);
      auto decoded = DecodeReplicaSnapshot(damaged);
      ASSERT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss)
          << "byte " << i << " ^ " << int{flip} << ": " << decoded.status();
    }
  }
}

TEST(ReplicaSnapshot, EveryTruncationAndTrailingByteIsDataLoss) {
  const std::string bytes = EncodeReplicaSnapshot(ThreeModels());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto decoded = DecodeReplicaSnapshot(std::string_view(bytes).substr(0, n));
    ASSERT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss)
        << n << " of " << bytes.size() << " bytes: " << decoded.status();
  }
  EXPECT_EQ(DecodeReplicaSnapshot(bytes + '\0').status().code(), absl::StatusCode::kDataLoss);
}

TEST(ReplicaSnapshot, NewerFormatVersionIsFailedPrecondition) {
  std::string bytes = EncodeReplicaSnapshot(ThreeModels());
  bytes[8] = static_cast<char>(kReplicaSnapshotFormatVersion + 1);  // the version's low byte
  Reseal(&bytes);
  auto decoded = DecodeReplicaSnapshot(bytes);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kFailedPrecondition) << decoded.status();
  EXPECT_NE(decoded.status().message().find("upgrade"), absl::string_view::npos);
}

TEST(ReplicaSnapshot, InconsistentContentsAreDataLoss) {
  ReplicaSnapshot later = ThreeModels();
  later.models[0].contents.log_sequence = later.sequence + 1;
  auto decoded = DecodeReplicaSnapshot(EncodeReplicaSnapshot(later));
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << decoded.status();
  EXPECT_NE(decoded.status().message().find("zeta"), absl::string_view::npos);

  ReplicaSnapshot repeated = ThreeModels();
  repeated.models[2].contents.config.name = "alpha";
  decoded = DecodeReplicaSnapshot(EncodeReplicaSnapshot(repeated));
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << decoded.status();
}

std::string TempDir() {
  static int n = 0;
  const std::string dir = ::testing::TempDir() + "/replica_snapshot_test_" +
                          std::to_string(getpid()) + "_" + std::to_string(n++);
  std::filesystem::remove_all(dir);  // PIDs repeat across runs
  return dir;
}

std::string BundleAt(uint64_t sequence) {
  ReplicaSnapshot snapshot;
  snapshot.sequence = sequence;
  snapshot.models.push_back(TrainedModel("m", OptimizerType::kFtrl, 10, 1, sequence));
  return EncodeReplicaSnapshot(snapshot);
}

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ReplicaSnapshotLocal, NoDirectoryLoadsNothing) {
  auto loaded = LoadNewestLocalReplicaSnapshot(Env::Default(), TempDir() + "/replica");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->path, "");
  EXPECT_TRUE(loaded->rejected.empty());
}

TEST(ReplicaSnapshotLocal, KeepsTheNewestAndLoadsTheNewest) {
  const std::string dir = TempDir() + "/replica";
  Env* env = Env::Default();
  ASSERT_TRUE(env->CreateDirs(dir).ok());
  // A temp file a crash left behind, and a file that is not a snapshot.
  std::ofstream(dir + "/" + LocalReplicaSnapshotName(3) + ".tmp") << "partial";
  std::ofstream(dir + "/notes.txt") << "kept";
  for (uint64_t sequence : {5, 9, 12}) {
    ASSERT_TRUE(WriteLocalReplicaSnapshot(env, dir, sequence, BundleAt(sequence), 2).ok());
  }
  EXPECT_EQ(Names(dir), (std::vector<std::string>{"notes.txt", "snapshot-00000000000000000009.snap",
                                                  "snapshot-00000000000000000012.snap"}));
  auto loaded = LoadNewestLocalReplicaSnapshot(env, dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->path, dir + "/snapshot-00000000000000000012.snap");
  EXPECT_EQ(loaded->snapshot.sequence, 12u);
  ASSERT_EQ(loaded->snapshot.models.size(), 1u);
  EXPECT_TRUE(loaded->rejected.empty());
  EXPECT_EQ(WriteLocalReplicaSnapshot(env, dir, 13, BundleAt(13), 0).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ReplicaSnapshotLocal, DamagedNewestFallsBackToAnOlderOne) {
  const std::string dir = TempDir() + "/replica";
  Env* env = Env::Default();
  for (uint64_t sequence : {5, 9, 12}) {
    ASSERT_TRUE(WriteLocalReplicaSnapshot(env, dir, sequence, BundleAt(sequence), 3).ok());
  }
  // 12 is damaged in the middle; 9 holds another sequence than its name's.
  const std::string newest = dir + "/" + LocalReplicaSnapshotName(12);
  std::string damaged = BundleAt(12);
  damaged[damaged.size() / 2] ^= 0x10;
  std::ofstream(newest, std::ios::binary | std::ios::trunc) << damaged;
  const std::string renamed = dir + "/" + LocalReplicaSnapshotName(9);
  std::ofstream(renamed, std::ios::binary | std::ios::trunc) << BundleAt(7);
  auto loaded = LoadNewestLocalReplicaSnapshot(env, dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->path, dir + "/" + LocalReplicaSnapshotName(5));
  EXPECT_EQ(loaded->snapshot.sequence, 5u);
  ASSERT_EQ(loaded->rejected.size(), 2u);
  EXPECT_EQ(loaded->rejected[0].rfind(newest + ": ", 0), 0u) << loaded->rejected[0];
  EXPECT_NE(loaded->rejected[0].find("checksum"), std::string::npos) << loaded->rejected[0];
  EXPECT_EQ(loaded->rejected[1].rfind(renamed + ": ", 0), 0u) << loaded->rejected[1];
  EXPECT_TRUE(env->FileExists(newest));  // left on disk for a post-mortem

  // Nothing whole: no snapshot, three rejections.
  std::ofstream(dir + "/" + LocalReplicaSnapshotName(5), std::ios::trunc) << "junk";
  loaded = LoadNewestLocalReplicaSnapshot(env, dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->path, "");
  EXPECT_EQ(loaded->rejected.size(), 3u);
}

TEST(ReplicaSnapshotLocal, NewerFormatVersionStopsTheSearch) {
  const std::string dir = TempDir() + "/replica";
  Env* env = Env::Default();
  ASSERT_TRUE(WriteLocalReplicaSnapshot(env, dir, 5, BundleAt(5), 2).ok());
  std::string newer = BundleAt(9);
  newer[8] = static_cast<char>(kReplicaSnapshotFormatVersion + 1);
  Reseal(&newer);
  ASSERT_TRUE(WriteLocalReplicaSnapshot(env, dir, 9, newer, 2).ok());
  auto loaded = LoadNewestLocalReplicaSnapshot(env, dir);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kFailedPrecondition) << loaded.status();
}

}  // namespace
}  // namespace clickd
