// The online calibration of a served model goes into its snapshots: a
// restart from one serves the same calibrated probabilities, unless the
// config now asks for a different fit.
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/persist/model_journal.h"
#include "core/persist/snapshot.h"
#include "core/serving/served_model.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

std::string NewDir() {
  static int n = 0;
  const std::string dir = ::testing::TempDir() + "/served_calibration_test_" +
                          std::to_string(getpid()) + "_" + std::to_string(n++);
  std::filesystem::remove_all(dir);
  return dir;
}

ModelConfig Calibrated(double half_life = 1e6) {
  ModelConfig config;
  config.name = "calibrated";
  config.calibration.enabled = true;
  config.calibration.half_life = half_life;
  return config;
}

// Learns `n` examples of 20 ads whose click rates differ, in batches.
void LearnClicks(ServedModel& served, int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(0, 1);
  constexpr int kBatch = 500;
  for (int done = 0; done < n; done += kBatch) {
    std::vector<Example> examples(std::min(kBatch, n - done));
    std::vector<TrainingExample> batch;
    for (Example& e : examples) {
      const int ad = static_cast<int>(rng() % 20);
      e.namespaces.push_back({"ad", {Feature::WithId(ad)}});
      const float click = uniform(rng) < 0.01 + 0.02 * ad ? 1.0f : 0.0f;
      batch.push_back({nullptr, &e, click, 1.0f});
    }
    ASSERT_TRUE(served.Learn(batch).ok());
  }
}

const std::vector<double> kProbabilities = {1e-4, 0.003, 0.02, 0.1, 0.3, 0.6, 0.95};

std::vector<double> CalibratedProbabilities(const ServedModel& served) {
  std::vector<double> out(kProbabilities.size());
  served.Calibrate(kProbabilities, absl::MakeSpan(out));
  return out;
}

// Enough examples for a fit (10,000, with over 100 clicks), a snapshot,
// more examples, then a restart: the fit is the snapshot's, exactly, and
// the examples replayed from the log after it are in the model, not the fit.
TEST(ServedModelCalibration, RestartFromASnapshotServesTheSameCalibration) {
  const std::string dir = NewDir();
  const ModelConfig config = Calibrated();
  auto served = std::make_unique<ServedModel>(
      *CreateModel(config), *ModelJournal::Create(dir, config, JournalOptions{}), RecoveryReport{});
  LearnClicks(*served, 12000, 1);
  ASSERT_TRUE(served->calibration().fitted);
  const std::vector<double> before = CalibratedProbabilities(*served);
  EXPECT_NE(before, kProbabilities);  // a fit, not the identity
  const std::string bytes = served->EncodeCalibration();
  ASSERT_TRUE(served->Snapshot().ok());
  LearnClicks(*served, 500, 2);
  const std::string digest = served->model().SerializeState();
  ASSERT_NE(served->EncodeCalibration(), bytes);
  served.reset();

  auto opened = ModelJournal::Open(dir, JournalOptions{});
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->calibration, bytes);
  auto restored = std::make_unique<ServedModel>(
      std::move(opened->model), std::move(opened->journal), opened->report, nullptr, SteadyNow,
      nullptr, WallNowMicros, std::move(opened->idempotency), opened->calibration);
  EXPECT_EQ(restored->model().SerializeState(), digest);
  EXPECT_EQ(CalibratedProbabilities(*restored), before);
  EXPECT_EQ(restored->EncodeCalibration(), bytes);
  const CalibrationSummary summary = restored->calibration();
  EXPECT_TRUE(summary.fitted);
  EXPECT_EQ(summary.examples, 12000u);
  // The before/after ratios count from the process start: no label yet.
  EXPECT_EQ(summary.raw_ratio, 0);
}

// A snapshot without a calibration (an older build's) restores an empty
// one, as a restart did before calibrations were kept.
TEST(ServedModelCalibration, SnapshotWithoutACalibrationStartsAFreshFit) {
  const std::string dir = NewDir();
  const ModelConfig config = Calibrated();
  auto journal = ModelJournal::Create(dir, config, JournalOptions{});
  ASSERT_TRUE(journal.ok()) << journal.status();
  auto model = *CreateModel(config);
  ASSERT_TRUE((*journal)->Snapshot(*model).ok());
  journal->reset();
  auto opened = ModelJournal::Open(dir, JournalOptions{});
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->calibration, "");
  ServedModel restored(std::move(opened->model), std::move(opened->journal), opened->report,
                       nullptr, SteadyNow, nullptr, WallNowMicros, nullptr, opened->calibration);
  EXPECT_TRUE(restored.calibrated());
  EXPECT_FALSE(restored.calibration().fitted);
  EXPECT_EQ(restored.calibration().examples, 0u);
}

// The config wins: a calibration fitted with another half_life is dropped
// for a fresh fit, and a model without calibration ignores the bytes.
TEST(ServedModelCalibration, TheConfigWinsOverTheRestoredFit) {
  ServedModel fitted(*CreateModel(Calibrated(1e6)));
  LearnClicks(fitted, 10000, 3);
  ASSERT_TRUE(fitted.calibration().fitted);
  const std::string bytes = fitted.EncodeCalibration();

  auto Restore = [&](const ModelConfig& config) {
    return std::make_unique<ServedModel>(*CreateModel(config), nullptr, RecoveryReport{}, nullptr,
                                         SteadyNow, nullptr, WallNowMicros, nullptr, bytes);
  };
  auto same = Restore(Calibrated(1e6));
  EXPECT_EQ(same->EncodeCalibration(), bytes);
  EXPECT_EQ(CalibratedProbabilities(*same), CalibratedProbabilities(fitted));

  auto shorter = Restore(Calibrated(5e5));
  EXPECT_FALSE(shorter->calibration().fitted);
  EXPECT_EQ(shorter->calibration().examples, 0u);
  EXPECT_EQ(CalibratedProbabilities(*shorter), kProbabilities);

  auto plain = Restore(ModelConfig{});
  EXPECT_FALSE(plain->calibrated());
  EXPECT_EQ(plain->EncodeCalibration(), "");
  EXPECT_EQ(CalibratedProbabilities(*plain), kProbabilities);
}

}  // namespace
}  // namespace clickd
