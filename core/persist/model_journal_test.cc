#include "core/persist/model_journal.h"

#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/base/background_thread.h"
#include "core/persist/batch_codec.h"
#include "core/persist/fault_injection_env.h"
#include "core/persist/file_update_log.h"
#include "core/persist/memory_update_log.h"
#include "core/persist/snapshot.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

// A fresh directory: PIDs repeat across runs, and /tmp may hold an old one.
std::string NewDir() {
  static int n = 0;
  const std::string dir = ::testing::TempDir() + "/journal_test_" + std::to_string(getpid()) + "_" +
                          std::to_string(n++);
  std::filesystem::remove_all(dir);
  return dir;
}

// Batches of impressions: a user context and three ads each.
struct Batches {
  std::deque<Example> examples;
  std::vector<std::vector<TrainingExample>> batches;
};

Batches MakeBatches(int n, uint32_t seed) {
  Batches out;
  std::mt19937 rng(seed);
  for (int b = 0; b < n; ++b) {
    std::vector<TrainingExample> batch;
    Example& ctx = out.examples.emplace_back();
    ctx.namespaces.push_back({"user", {Feature::WithId(rng() % 40), Feature::Named("geo=fr")}});
    for (int c = 0; c < 3; ++c) {
      Example& ad = out.examples.emplace_back();
      const uint64_t id = rng() % 10;
      ad.namespaces.push_back({"ad", {Feature::WithId(id, 0.5f + c)}});
      batch.push_back({&ctx, &ad, (id < 2 && rng() % 2) ? 1.0f : 0.0f, c == 2 ? 2.0f : 1.0f});
    }
    out.batches.push_back(batch);
  }
  return out;
}

// Simulates a crash: the journal is never destroyed (its destructor would
// sync the log), but stays reachable so that LeakSanitizer is content.
void Crash(std::unique_ptr<ModelJournal> journal) {
  static auto* abandoned = new std::vector<std::unique_ptr<ModelJournal>>();
  abandoned->push_back(std::move(journal));
}

ModelConfig Config() {
  ModelConfig c;
  c.name = "ctr";
  c.hashing.interactions = {{"user", "ad"}};
  return c;
}

std::string ReferenceState(const Batches& data, size_t batches) {
  auto model = *CreateModel(Config());
  for (size_t i = 0; i < batches; ++i) LearnBatch(*model, data.batches[i]);
  return model->SerializeState();
}

// The journal tests that are not about files run on each UpdateLog: the
// embedded file log (JournalOptions::open_log unset, the default) and
// MemoryUpdateLog.
enum class LogKind { kFile, kMemory };

class JournalOnEachLog : public ::testing::TestWithParam<LogKind> {
 protected:
  JournalOptions Options() const {
    JournalOptions options;
    if (GetParam() == LogKind::kMemory) options.open_log = memory_logs_;
    return options;
  }

 private:
  // One per test: its logs outlive the journals, as files outlive a crash.
  const UpdateLogOpener memory_logs_ = MemoryUpdateLog::Opener();
};

INSTANTIATE_TEST_SUITE_P(, JournalOnEachLog, ::testing::Values(LogKind::kFile, LogKind::kMemory),
                         [](const ::testing::TestParamInfo<LogKind>& info) {
                           return info.param == LogKind::kFile ? "FileLog" : "MemoryLog";
                         });

TEST(BatchCodec, RoundTripsImpressionsAndFlatExamples) {
  const Batches data = MakeBatches(2, 1);
  std::vector<TrainingExample> batch = data.batches[0];
  batch.push_back({nullptr, data.batches[1][0].example, -1.0f, 0.25f});
  std::string bytes;
  EncodeBatch(batch, &bytes);
  auto decoded = DecodeBatch(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->batch.size(), 4u);
  EXPECT_EQ(decoded->batch[0].context, decoded->batch[2].context);  // stored once
  EXPECT_EQ(decoded->batch[3].context, nullptr);
  EXPECT_EQ(decoded->batch[3].label, -1.0f);
  EXPECT_EQ(decoded->batch[2].importance, 2.0f);
  std::string again;
  EncodeBatch(decoded->batch, &again);
  EXPECT_EQ(again, bytes);
  for (size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(DecodeBatch(bytes.substr(0, n)).ok());
}

// Snapshot + log replay rebuilds the exact bytes of a model that learned
// every acknowledged batch, with and without a snapshot in between.
TEST_P(JournalOnEachLog, RestartRebuildsTheSameModel) {
  const Batches data = MakeBatches(60, 2);
  const std::string dir = NewDir();
  const JournalOptions options = Options();
  {
    auto journal = *ModelJournal::Create(dir, Config(), options);
    auto model = *CreateModel(Config());
    for (int i = 0; i < 25; ++i) ASSERT_TRUE(journal->Learn(*model, data.batches[i]).ok());
    auto report = journal->Snapshot(*model);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->sequence, 25u);
    for (int i = 25; i < 60; ++i) ASSERT_TRUE(journal->Learn(*model, data.batches[i]).ok());
    EXPECT_EQ(journal->records_since_snapshot(), 35u);
    Crash(std::move(journal));
  }
  auto opened = ModelJournal::Open(dir, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->report.snapshot_sequence, 25u);
  EXPECT_EQ(opened->report.replayed_records, 35u);
  EXPECT_TRUE(opened->report.rejected_snapshots.empty());
  EXPECT_EQ(opened->model->SerializeState(), ReferenceState(data, 60));
  EXPECT_EQ(opened->model->config().hashing.interactions, Config().hashing.interactions);
}

// Each snapshot holds exactly the records up to its sequence: it restores
// to the state of a model that learned just those.
void ExpectEachHoldsExactlyItsSequence(Env* env, const Batches& data,
                                       const std::vector<SnapshotReport>& reports) {
  for (const SnapshotReport& report : reports) {
    auto contents = ReadSnapshot(env, report.path);
    ASSERT_TRUE(contents.ok()) << contents.status();
    ASSERT_EQ(contents->log_sequence, report.sequence);
    auto restored = *CreateModel(Config());
    ASSERT_TRUE(restored->ImportState(contents->state).ok());
    EXPECT_EQ(restored->SerializeState(), ReferenceState(data, report.sequence)) << report.sequence;
  }
}

// Snapshots taken while another thread learns through the journal (the
// copy is made after the learn lock is released) hold exactly the records
// up to their sequence, and restore to them.
TEST_P(JournalOnEachLog, SnapshotDuringLearningHoldsExactlyItsSequence) {
  const Batches data = MakeBatches(400, 9);
  const std::string dir = NewDir();
  JournalOptions options = Options();
  options.keep_snapshots = 100;
  options.log.sync = SyncMode::kNone;
  auto journal = *ModelJournal::Create(dir, Config(), options);
  auto model = *CreateModel(Config());
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(journal->Learn(*model, data.batches[i]).ok());
  std::thread learner([&] {
    for (int i = 50; i < 400; ++i) ASSERT_TRUE(journal->Learn(*model, data.batches[i]).ok());
  });
  std::vector<SnapshotReport> reports;
  for (int i = 0; i < 5; ++i) {
    auto report = journal->Snapshot(*model);
    ASSERT_TRUE(report.ok()) << report.status();
    reports.push_back(*report);
  }
  learner.join();
  ExpectEachHoldsExactlyItsSequence(options.env, data, reports);
}

// With a BackgroundThread (the snapshotter's split: shards read on the
// calling thread, sorted, encoded and written on the other), snapshots
// taken while learning goes on still hold exactly their sequence, and a
// snapshot's file has the same bytes as one written all on the caller.
TEST_P(JournalOnEachLog, SnapshotEncodedOnABackgroundThreadIsTheSame) {
  const Batches data = MakeBatches(300, 11);
  JournalOptions options = Options();
  options.keep_snapshots = 100;
  options.log.sync = SyncMode::kNone;
  BackgroundThread background(/*nice_increment=*/10);
  auto journal = *ModelJournal::Create(NewDir(), Config(), options);
  auto model = *CreateModel(Config());
  auto alone = *ModelJournal::Create(NewDir(), Config(), options);
  auto twin = *CreateModel(Config());
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(journal->Learn(*model, data.batches[i]).ok());
    ASSERT_TRUE(alone->Learn(*twin, data.batches[i]).ok());
  }
  auto split = journal->Snapshot(*model, nullptr, nullptr, {}, &background);
  auto whole = alone->Snapshot(*twin);
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(*ReadWholeFile(options.env, split->path), *ReadWholeFile(options.env, whole->path));

  std::thread learner([&] {
    for (int i = 50; i < 300; ++i) ASSERT_TRUE(journal->Learn(*model, data.batches[i]).ok());
  });
  std::vector<SnapshotReport> reports;
  for (int i = 0; i < 4; ++i) {
    auto report = journal->Snapshot(*model, nullptr, nullptr, {}, &background);
    ASSERT_TRUE(report.ok()) << report.status();
    reports.push_back(*report);
  }
  learner.join();
  ExpectEachHoldsExactlyItsSequence(options.env, data, reports);
}

TEST_P(JournalOnEachLog, DamagedNewestSnapshotFallsBackToThePreviousOne) {
  const Batches data = MakeBatches(30, 3);
  const std::string dir = NewDir();
  const JournalOptions options = Options();
  std::string newest;
  {
    auto journal = *ModelJournal::Create(dir, Config(), options);
    auto model = *CreateModel(Config());
    for (int i = 0; i < 30; ++i) {
      ASSERT_TRUE(journal->Learn(*model, data.batches[i]).ok());
      if (i == 9 || i == 19) newest = journal->Snapshot(*model)->path;
    }
  }
  // Truncate the newest snapshot, as a crash during a copy might.
  const std::string bytes = *ReadWholeFile(Env::Default(), newest);
  ASSERT_TRUE(Env::Default()->TruncateFile(newest, bytes.size() / 2).ok());
  auto opened = ModelJournal::Open(dir, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->report.snapshot_sequence, 10u);
  ASSERT_EQ(opened->report.rejected_snapshots.size(), 1u);
  EXPECT_NE(opened->report.rejected_snapshots[0].find("corrupt"), std::string::npos);
  EXPECT_EQ(opened->report.replayed_records, 20u);
  EXPECT_EQ(opened->model->SerializeState(), ReferenceState(data, 30));
}

// A backup of MODEL + the newest snapshot, without the log, restores to the
// snapshot, and learning continues from there across another restart.
TEST_P(JournalOnEachLog, SnapshotWithoutItsLogRestoresAndLearningContinues) {
  const Batches data = MakeBatches(30, 4);
  const std::string dir = NewDir(), restored = NewDir();
  const JournalOptions options = Options();
  std::string snapshot_path;
  {
    auto journal = *ModelJournal::Create(dir, Config(), options);
    auto model = *CreateModel(Config());
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(journal->Learn(*model, data.batches[i]).ok());
    snapshot_path = journal->Snapshot(*model)->path;
  }
  Env* env = Env::Default();
  ASSERT_TRUE(env->CreateDirs(restored).ok());
  for (const std::string& name :
       {std::string("MODEL"), snapshot_path.substr(snapshot_path.rfind('/') + 1)}) {
    const std::string bytes = *ReadWholeFile(env, dir + "/" + name);
    ASSERT_TRUE(WriteFileAtomically(env, restored + "/" + name, [&](WritableFile* f) {
                  return f->Append(bytes);
                }).ok());
  }
  {
    auto opened = ModelJournal::Open(restored, options);
    ASSERT_TRUE(opened.ok()) << opened.status();
    EXPECT_TRUE(opened->report.log_restarted);
    EXPECT_EQ(opened->model->SerializeState(), ReferenceState(data, 20));
    for (int i = 20; i < 30; ++i) {
      ASSERT_TRUE(opened->journal->Learn(*opened->model, data.batches[i]).ok());
    }
  }
  auto reopened = ModelJournal::Open(restored, options);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_FALSE(reopened->report.log_restarted);
  EXPECT_EQ(reopened->report.replayed_records, 10u);
  EXPECT_EQ(reopened->model->SerializeState(), ReferenceState(data, 30));
}

// With keep_snapshots = 1 and the only snapshot gone, the log no longer
// starts at record 1: restoring it alone would silently lose what the
// snapshot held, so Open refuses.
TEST_P(JournalOnEachLog, LogThatDoesNotReachBackToTheSnapshotIsDataLoss) {
  const Batches data = MakeBatches(12, 5);
  const std::string dir = NewDir();
  JournalOptions options = Options();
  options.keep_snapshots = 1;
  std::string newest;
  {
    auto journal = *ModelJournal::Create(dir, Config(), options);
    auto model = *CreateModel(Config());
    for (int i = 0; i < 12; ++i) {
      ASSERT_TRUE(journal->Learn(*model, data.batches[i]).ok());
      if (i == 4 || i == 9) newest = journal->Snapshot(*model)->path;
    }
  }
  ASSERT_TRUE(Env::Default()->RemoveFile(newest).ok());
  auto opened = ModelJournal::Open(dir, options);
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(opened.status().message().find("records 1..10 are missing"), std::string::npos)
      << opened.status();
}

// Everything acknowledged under every_request sync survives losing all
// unsynced data; a failed append applies nothing.
TEST(ModelJournal, AcknowledgedBatchesSurviveAPowerLoss) {
  FaultInjectionEnv env(Env::Default());
  const Batches data = MakeBatches(40, 4);
  const std::string dir = NewDir();
  JournalOptions options;
  options.env = &env;
  size_t acknowledged = 0;
  {
    auto journal = *ModelJournal::Create(dir, Config(), options);
    auto model = *CreateModel(Config());
    for (int i = 0; i < 40; ++i) {
      if (i == 30) env.SetWriteBudget(50);  // the disk fills up
      auto learned = journal->Learn(*model, data.batches[i]);
      if (!learned.ok()) {
        EXPECT_EQ(learned.status().code(), absl::StatusCode::kUnavailable);
        break;
      }
      ++acknowledged;
      if (i == 15) {
        ASSERT_TRUE(journal->Snapshot(*model).ok());
      }
    }
    EXPECT_EQ(acknowledged, 30u);
    EXPECT_EQ(model->Updates(), 30u * 3);  // the failed batch applied nothing
    Crash(std::move(journal));
  }
  env.SetWriteBudget(-1);
  ASSERT_TRUE(env.DropUnsyncedData().ok());
  auto opened = ModelJournal::Open(dir, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->model->SerializeState(), ReferenceState(data, acknowledged));
}

TEST_P(JournalOnEachLog, CreateRefusesAnExistingModelAndDestroyRemovesIt) {
  const std::string dir = NewDir();
  const JournalOptions options = Options();
  ASSERT_TRUE(ModelJournal::Create(dir, Config(), options).ok());
  EXPECT_EQ(ModelJournal::Create(dir, Config(), options).status().code(),
            absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(ModelJournal::Destroy(Env::Default(), dir).ok());
  EXPECT_FALSE(ModelJournal::Open(dir, options).ok());
  EXPECT_TRUE(ModelJournal::Create(dir, Config(), options).ok());
}

// A model created again under a deleted one's name starts from nothing: the
// deleted model's records are not replayed into it.
TEST_P(JournalOnEachLog, ModelCreatedAfterADeleteStartsWithAnEmptyLog) {
  const Batches data = MakeBatches(5, 9);
  const std::string dir = NewDir();
  const JournalOptions options = Options();
  {
    auto journal = *ModelJournal::Create(dir, Config(), options);
    auto model = *CreateModel(Config());
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(journal->Learn(*model, data.batches[i]).ok());
    journal->Close();
  }
  ASSERT_TRUE(ModelJournal::Destroy(Env::Default(), dir).ok());
  auto created = ModelJournal::Create(dir, Config(), options);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)->log_sequence(), 0u);
  auto model = *CreateModel(Config());
  ASSERT_TRUE((*created)->Learn(*model, data.batches[0]).ok());
  EXPECT_EQ((*created)->log_sequence(), 1u);
  created->reset();
  auto opened = ModelJournal::Open(dir, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->report.replayed_records, 1u);
  EXPECT_EQ(opened->model->SerializeState(), ReferenceState(data, 1));
}

// Whatever log an opener hands back, a new model does not start on records.
TEST(ModelJournal, CreateRefusesALogThatHoldsRecords) {
  JournalOptions options;
  options.open_log = [](Env*, const std::string&, const UpdateLogOptions&, UpdateLogRecovery*,
                        const LogRecoveryOptions&) -> absl::StatusOr<std::unique_ptr<UpdateLog>> {
    auto log = std::make_unique<MemoryUpdateLog>();
    (void)log->Append("a record of another model");
    return std::unique_ptr<UpdateLog>(std::move(log));
  };
  auto created = ModelJournal::Create(NewDir(), Config(), options);
  EXPECT_EQ(created.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(created.status().message().find("holding records 1..1"), std::string::npos)
      << created.status();
}

// Byte offsets of the records of a log segment, by sequence.
std::map<uint64_t, size_t> RecordOffsets(const std::string& path) {
  std::map<uint64_t, size_t> offsets;
  size_t offset = 0;
  FileUpdateLog::ParseSegment(*ReadWholeFile(Env::Default(), path),
                              [&](uint64_t sequence, std::string_view payload) {
                                offsets[sequence] = offset;
                                offset += 16 + payload.size();
                              });
  return offsets;
}

void FlipByte(const std::string& path, size_t offset) {
  std::string bytes = *ReadWholeFile(Env::Default(), path);
  bytes[offset] ^= 0x20;
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, [&](WritableFile* f) {
                return f->Append(bytes);
              }).ok());
}

// 12 batches, snapshots at 3 and 8: the log holds log/...04.log (records
// 4..8, which the newest snapshot covers) and log/...09.log (9..12).
std::string JournalWithTwoSegments(const Batches& data) {
  const std::string dir = NewDir();
  auto journal = *ModelJournal::Create(dir, Config(), {});
  auto model = *CreateModel(Config());
  for (int i = 0; i < 12; ++i) {
    EXPECT_TRUE(journal->Learn(*model, data.batches[i]).ok());
    if (i == 2 || i == 7) {
      EXPECT_TRUE(journal->Snapshot(*model).ok());
    }
  }
  Crash(std::move(journal));
  return dir;
}

TEST(ModelJournal, DamagedLogIsDataLossUnlessSalvaged) {
  const Batches data = MakeBatches(12, 6);
  const std::string dir = JournalWithTwoSegments(data);
  const std::string segment = dir + "/log/00000000000000000009.log";
  const auto offsets = RecordOffsets(segment);
  FlipByte(segment, offsets.at(10) + 20);
  const std::string message =
      absl::StrCat("log/00000000000000000009.log: damaged at byte ", offsets.at(10),
                   " (a record of ", offsets.at(11) - offsets.at(10),
                   " bytes fails its checksum): records 10 to at least 12 follow the damage");
  auto failed = ModelJournal::Open(dir, {});
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(failed.status().message(), message);

  JournalOptions salvage;
  salvage.salvage_damaged_log = true;
  auto opened = ModelJournal::Open(dir, salvage);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->report.salvaged_log_damage, message);
  EXPECT_EQ(opened->report.dropped_from, 10u);
  EXPECT_EQ(opened->report.dropped_at_least_through, 12u);
  EXPECT_EQ(opened->report.moved_aside.size(), 1u);
  EXPECT_EQ(opened->model->SerializeState(), ReferenceState(data, 9));
  ASSERT_TRUE(opened->journal->Learn(*opened->model, data.batches[9]).ok());
  EXPECT_EQ(opened->journal->log_sequence(), 10u);
}

TEST(ModelJournal, DamageTheSnapshotCoversDoesNotStopOpen) {
  const Batches data = MakeBatches(12, 7);
  const std::string dir = JournalWithTwoSegments(data);
  const std::string segment = dir + "/log/00000000000000000004.log";
  FlipByte(segment, RecordOffsets(segment).at(6) + 20);
  auto opened = ModelJournal::Open(dir, {});
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->report.snapshot_sequence, 8u);
  ASSERT_EQ(opened->report.covered_log_damage.size(), 1u);
  EXPECT_NE(opened->report.covered_log_damage[0].find("log/00000000000000000004.log: damaged at "),
            std::string::npos);
  EXPECT_EQ(opened->model->SerializeState(), ReferenceState(data, 12));
}

// A crash between writing a snapshot and rolling the log leaves a segment
// that runs past the snapshot. Damage in it before the snapshot's sequence
// still stops Open (the records after the snapshot cannot be read); salvage
// restores the snapshot and starts the log over after it.
TEST(ModelJournal, SalvageShortOfTheSnapshotRestartsTheLogAfterIt) {
  const Batches data = MakeBatches(12, 8);
  const std::string dir = NewDir();
  {
    auto journal = *ModelJournal::Create(dir, Config(), {});
    auto model = *CreateModel(Config());
    for (int i = 0; i < 12; ++i) ASSERT_TRUE(journal->Learn(*model, data.batches[i]).ok());
    Crash(std::move(journal));
  }
  auto at_8 = *CreateModel(Config());
  for (int i = 0; i < 8; ++i) LearnBatch(*at_8, data.batches[i]);
  SnapshotContents contents;
  contents.config = Config();
  contents.log_sequence = 8;
  contents.state = at_8->ExportState();
  ASSERT_TRUE(
      WriteSnapshot(Env::Default(), dir + "/snapshot-00000000000000000008.snap", contents).ok());
  const std::string segment = dir + "/log/00000000000000000001.log";
  FlipByte(segment, RecordOffsets(segment).at(5) + 20);

  auto failed = ModelJournal::Open(dir, {});
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(failed.status().message().find("records 5 to at least 12 follow the damage"),
            std::string::npos)
      << failed.status();

  JournalOptions salvage;
  salvage.salvage_damaged_log = true;
  auto opened = ModelJournal::Open(dir, salvage);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_TRUE(opened->report.log_restarted);
  EXPECT_EQ(opened->report.dropped_from, 5u);
  EXPECT_EQ(opened->model->SerializeState(), ReferenceState(data, 8));
  ASSERT_TRUE(opened->journal->Learn(*opened->model, data.batches[8]).ok());
  EXPECT_EQ(opened->journal->log_sequence(), 9u);
}

// Probabilistic feature inclusion draws from the key and the round, so a
// restart (snapshot + replay) admits exactly the features the live model
// admitted, and the restored model continues bit for bit.
TEST_P(JournalOnEachLog, RestartWithFeatureAdmissionRebuildsTheSameModel) {
  ModelConfig config = Config();
  config.admission.policy = AdmissionOptions::Policy::kPoisson;
  config.admission.probability = 0.3;
  const Batches data = MakeBatches(60, 3);
  const std::string dir = NewDir();
  const JournalOptions options = Options();
  std::string live;
  uint64_t admitted_coordinates = 0;
  {
    auto journal = *ModelJournal::Create(dir, config, options);
    auto model = *CreateModel(config);
    for (int i = 0; i < 30; ++i) ASSERT_TRUE(journal->Learn(*model, data.batches[i]).ok());
    ASSERT_TRUE(journal->Snapshot(*model).ok());
    for (int i = 30; i < 60; ++i) ASSERT_TRUE(journal->Learn(*model, data.batches[i]).ok());
    live = model->SerializeState();
    admitted_coordinates = model->Stats().coordinates;
    Crash(std::move(journal));
  }
  auto opened = ModelJournal::Open(dir, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->model->config().admission.probability, 0.3);
  EXPECT_EQ(opened->model->SerializeState(), live);
  // Admission kept some features out: the same batches without it store more.
  auto all = *CreateModel(Config());
  for (const auto& batch : data.batches) LearnBatch(*all, batch);
  EXPECT_LT(admitted_coordinates, all->Stats().coordinates);
  EXPECT_GT(admitted_coordinates, 0u);
}

}  // namespace
}  // namespace clickd
