// Unit tests of loadgen's pure parts (histogram, open-loop schedule,
// synthetic requests) and of its load loops against an in-process fake
// issuer. No assertion depends on how fast anything runs: runs are bounded
// by --max_requests long before their (generous) durations.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/clickctl/loadgen_calls.h"
#include "client/clickctl/loadgen_histogram.h"
#include "client/clickctl/loadgen_requests.h"
#include "client/clickctl/loadgen_runner.h"
#include "client/clickctl/loadgen_schedule.h"
#include "client/clickd_client.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(LatencyHistogram, BucketsTileTheRangeWithStatedPrecision) {
  const int n = LatencyHistogram::NumBuckets();
  uint64_t expected_low = 0;
  for (int b = 0; b < n; ++b) {
    const uint64_t low = LatencyHistogram::BucketLow(b);
    const uint64_t width = LatencyHistogram::BucketWidth(b);
    ASSERT_EQ(low, expected_low) << "bucket " << b;
    ASSERT_EQ(LatencyHistogram::BucketOf(low), b);
    ASSERT_EQ(LatencyHistogram::BucketOf(low + width - 1), b);
    if (low < 256) {
      EXPECT_EQ(width, 1u);
    } else {
      EXPECT_LE(width * 128, low) << "bucket " << b;  // at most 1/128 of its values
    }
    expected_low = low + width;
  }
  EXPECT_EQ(expected_low, uint64_t{1} << LatencyHistogram::kMaxBits);
  EXPECT_EQ(LatencyHistogram::BucketOf(UINT64_MAX), n - 1);
}

TEST(LatencyHistogram, SmallValuesAreExactNearestRank) {
  LatencyHistogram h;
  for (int v = 100; v >= 1; --v) h.Record(v);
  EXPECT_EQ(h.QuantileNanos(0.5), 50);
  EXPECT_EQ(h.QuantileNanos(0.9), 90);
  EXPECT_EQ(h.QuantileNanos(0.99), 99);
  EXPECT_EQ(h.QuantileNanos(0.999), 100);
  EXPECT_EQ(h.QuantileNanos(1e-9), 1);
  const LatencySummary s = h.Summarize();
  EXPECT_EQ(s.count, 100u);
  EXPECT_DOUBLE_EQ(s.mean_us, 50.5e-3);
  EXPECT_DOUBLE_EQ(s.min_us, 1e-3);
  EXPECT_DOUBLE_EQ(s.max_us, 100e-3);
}

TEST(LatencyHistogram, LargeValuesWithinStatedRelativeError) {
  LatencyHistogram h;
  std::vector<int64_t> values;
  for (int64_t k = 1; k <= 10'000; ++k) values.push_back(k * 997 + (k * k) % 1000);
  for (int64_t v : values) h.Record(v);
  std::sort(values.begin(), values.end());
  for (double p : {0.5, 0.9, 0.99, 0.999}) {
    const double exact = static_cast<double>(values[static_cast<size_t>(p * 10'000) - 1]);
    EXPECT_NEAR(h.QuantileNanos(p), exact, exact / 256 + 0.5) << p;
  }
  EXPECT_EQ(h.QuantileNanos(1.0), static_cast<double>(values.back()));
  const LatencySummary s = h.Summarize();
  EXPECT_LE(s.p50_us, s.p90_us);
  EXPECT_LE(s.p90_us, s.p99_us);
  EXPECT_LE(s.p99_us, s.p999_us);
  EXPECT_LE(s.p999_us, s.max_us);
}

TEST(LatencyHistogram, EmptyNegativeAndHuge) {
  LatencyHistogram h;
  EXPECT_EQ(h.Summarize().count, 0u);
  EXPECT_EQ(h.QuantileNanos(0.5), 0);
  h.Record(-5);
  h.Record(int64_t{1} << 50);
  EXPECT_EQ(h.QuantileNanos(0.5), 0);
  EXPECT_EQ(h.QuantileNanos(1.0), static_cast<double>(int64_t{1} << 50));  // clamped to max
}

TEST(LatencyHistogram, ConcurrentRecordsAllCount) {
  LatencyHistogram h;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < 10'000; ++i) h.Record(1000 * t + i);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(h.Summarize().count, 40'000u);
}

TEST(OpenLoopSchedule, DueTimesDoNotDrift) {
  const OpenLoopSchedule s(3);  // 333,333,333.3 ns apart
  EXPECT_EQ(s.DueNanos(0), 0);
  EXPECT_EQ(s.DueNanos(1), 333'333'333);
  EXPECT_EQ(s.DueNanos(2), 666'666'667);
  EXPECT_EQ(s.DueNanos(3), 1'000'000'000);
  EXPECT_EQ(s.DueNanos(3'000'000), 1'000'000'000'000'000);
  const OpenLoopSchedule fast(10'000);
  EXPECT_EQ(fast.DueNanos(123'456'789), 12'345'678'900'000);
}

TEST(OpenLoopSchedule, DueBeforeCountsDueTimes) {
  for (double rate : {3.0, 5000.0, 10'000.0, 7777.7}) {
    const OpenLoopSchedule s(rate);
    for (int64_t t : {int64_t{-1}, int64_t{0}, int64_t{1}, int64_t{99'999}, int64_t{100'000},
                      int64_t{100'001}, int64_t{1'000'000'000}, int64_t{5'000'000'001}}) {
      const uint64_t n = s.DueBefore(t);
      if (n > 0) {
        EXPECT_LT(s.DueNanos(n - 1), t) << rate << " " << t;
      }
      EXPECT_GE(s.DueNanos(n), t) << rate << " " << t;
    }
  }
  EXPECT_EQ(OpenLoopSchedule(10'000).DueBefore(1'000'000'000), 10'000u);
}

TEST(SyntheticRequests, DeterministicPerSeedAndIndex) {
  const RequestShape shape{5, 3, 7};
  const SyntheticRequests a(shape, 42), b(shape, 42), c(shape, 43);
  EXPECT_EQ(a.Predict("m", 9).SerializeAsString(), b.Predict("m", 9).SerializeAsString());
  EXPECT_EQ(a.Update("m", 9).SerializeAsString(), b.Update("m", 9).SerializeAsString());
  EXPECT_NE(a.Predict("m", 9).SerializeAsString(), c.Predict("m", 9).SerializeAsString());
  EXPECT_NE(a.Predict("m", 9).SerializeAsString(), a.Predict("m", 10).SerializeAsString());
  // Generation order does not matter.
  const auto pool = MakePool<v1::PredictRequest>(20, [&](uint64_t i) { return a.Predict("m", i); });
  EXPECT_EQ(pool[9].SerializeAsString(), a.Predict("m", 9).SerializeAsString());
}

TEST(SyntheticRequests, ShapesAndNames) {
  const SyntheticRequests r(RequestShape{20, 100, 20}, 1);
  const v1::PredictRequest p = r.Predict("ctr", 0);
  EXPECT_EQ(p.model(), "ctr");
  ASSERT_EQ(p.context().namespaces_size(), 1);
  EXPECT_EQ(p.context().namespaces(0).name(), "user");
  EXPECT_EQ(p.context().namespaces(0).features_size(), 20);
  ASSERT_EQ(p.candidates_size(), 100);
  for (const v1::Example& c : p.candidates()) {
    ASSERT_EQ(c.namespaces_size(), 1);
    EXPECT_EQ(c.namespaces(0).name(), "ad");
    std::set<std::string> fields;
    for (const v1::Feature& f : c.namespaces(0).features()) {
      const std::string& name = f.name();
      ASSERT_EQ(name[0], 'a');
      fields.insert(name.substr(0, name.find('=')));
      EXPECT_FALSE(f.has_value());
    }
    EXPECT_EQ(fields.size(), 20u);  // one value per field
  }
  const v1::UpdateRequest u = r.Update("ctr", 0);
  ASSERT_EQ(u.impressions_size(), 1);
  EXPECT_EQ(u.impressions(0).candidates_size(), 100);
  EXPECT_EQ(ExamplesIn(u), 100u);
  for (const v1::LabeledExample& e : u.impressions(0).candidates()) {
    EXPECT_TRUE(e.label() == 0.0f || e.label() == 1.0f);
  }
  const v1::UpdateRequest flat = SyntheticRequests(RequestShape{0, 4, 40}, 1).Update("ctr", 0);
  EXPECT_EQ(flat.impressions_size(), 0);
  EXPECT_EQ(flat.examples_size(), 4);
  EXPECT_EQ(flat.examples(0).example().namespaces(0).features_size(), 40);
  EXPECT_EQ(
      SyntheticRequests(RequestShape{0, 1, 40}, 1).Predict("m", 0).context().namespaces_size(), 0);
}

TEST(SyntheticRequests, FeatureIdsPackFieldAndValue) {
  RequestShape shape{0, 2, 30};
  const v1::PredictRequest named = SyntheticRequests(shape, 5).Predict("m", 3);
  shape.feature_ids = true;
  const v1::PredictRequest ids = SyntheticRequests(shape, 5).Predict("m", 3);
  ASSERT_EQ(ids.candidates_size(), 2);
  for (int c = 0; c < 2; ++c) {
    const v1::Namespace& a = named.candidates(c).namespaces(0);
    const v1::Namespace& b = ids.candidates(c).namespaces(0);
    ASSERT_EQ(b.features_size(), 30);
    for (int j = 0; j < 30; ++j) {
      ASSERT_EQ(b.features(j).key_case(), v1::Feature::kId);
      // The same draws: "a<j>=<v>" becomes j * 2^32 + v.
      const uint64_t id = b.features(j).id();
      EXPECT_EQ(a.features(j).name(), absl::StrCat("a", id >> 32, "=", id & 0xffffffffu));
    }
  }
}

// Every wire form carries the same features: packed names or ids, or the
// keys a client hashes from them with the model's seed.
TEST(SyntheticRequests, EveryWireFormCarriesTheSameFeatures) {
  for (bool ids : {false, true}) {
    RequestShape shape{4, 2, 6};
    shape.feature_ids = ids;
    shape.hashing_seed = 77;
    const v1::PredictRequest features = SyntheticRequests(shape, 5).Predict("m", 3);
    shape.wire = WireForm::kPacked;
    const v1::PredictRequest packed = SyntheticRequests(shape, 5).Predict("m", 3);
    shape.wire = WireForm::kKeys;
    const v1::PredictRequest keys = SyntheticRequests(shape, 5).Predict("m", 3);
    auto want_keys = HashedPredictContext::Create(KeyHasher(77), features.context());
    ASSERT_TRUE(want_keys.ok());
    auto want = want_keys->Request(features);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(keys.SerializeAsString(), want->SerializeAsString()) << ids;
    for (int c = 0; c < 2; ++c) {
      const v1::Namespace& a = features.candidates(c).namespaces(0);
      const v1::Namespace& b = packed.candidates(c).namespaces(0);
      ASSERT_EQ(b.features_size(), 0);
      ASSERT_EQ((ids ? b.ids_size() : b.names_size()), 6);
      EXPECT_EQ(b.values_size() + b.id_values_size(), 0);  // every value 1
      for (int j = 0; j < 6; ++j) {
        if (ids) {
          EXPECT_EQ(b.ids(j), a.features(j).id());
        } else {
          EXPECT_EQ(b.names(j), a.features(j).name());
        }
      }
    }
  }
  EXPECT_EQ(*ParseWireForm("keys"), WireForm::kKeys);
  EXPECT_EQ(ParseWireForm("fast").status().message(),
            "--wire is \"fast\"; want features, packed or keys");
}

TEST(SyntheticRequests, ValuesAreZipfLike) {
  const SyntheticRequests r(RequestShape{}, 1);
  EXPECT_EQ(r.ZipfValue(0.0), 1);
  EXPECT_EQ(r.ZipfValue(0.999999999), SyntheticRequests::kVocabulary);
  // Over many requests value 1 is the most common and about twice (2^1.1)
  // as common as value 2.
  std::map<std::string, int> counts;
  for (uint64_t i = 0; i < 2000; ++i) {
    const v1::PredictRequest request = r.Predict("m", i);
    for (const v1::Feature& f : request.candidates(0).namespaces(0).features()) {
      counts[f.name().substr(f.name().find('=') + 1)]++;
    }
  }
  EXPECT_GT(counts["1"], counts["2"]);
  EXPECT_GT(counts["2"], counts["10"]);
  EXPECT_NEAR(static_cast<double>(counts["1"]) / counts["2"], 2.14, 0.3);
  EXPECT_GT(counts.size(), 1000u);  // and a long tail
}

TEST(PoolSize, KeepsAboutAMillionFeatures) {
  EXPECT_EQ(PoolSize(40), 1024u);
  EXPECT_EQ(PoolSize(2020), 519u);
  EXPECT_EQ(PoolSize(10'000'000), 1u);
  EXPECT_EQ(PoolSize(0), 1024u);
}

// Completes calls on its own thread, like gRPC's callback threads: OK, or
// UNAVAILABLE for the indices `fails` picks.
class FakeIssuer final : public CallIssuer {
 public:
  explicit FakeIssuer(bool fail_odd = false) : fail_odd_(fail_odd), worker_([this] { Work(); }) {}
  ~FakeIssuer() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  void Start(uint64_t index, grpc::ClientContext*, Done done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back({index, std::move(done)});
      ++started_;
    }
    cv_.notify_one();
  }
  uint64_t Units(uint64_t index) const override { return 3; }

  uint64_t started() {
    std::lock_guard<std::mutex> lock(mu_);
    return started_;
  }

 private:
  void Work() {
    for (;;) {
      std::pair<uint64_t, Done> next;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stop_ and nothing left
        next = std::move(queue_.front());
        queue_.pop_front();
      }
      const bool fail = fail_odd_ && next.first % 2 == 1;
      next.second(fail ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "odd") : grpc::Status::OK);
    }
  }

  const bool fail_odd_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<uint64_t, Done>> queue_;  // guarded by mu_
  uint64_t started_ = 0;                         // guarded by mu_
  bool stop_ = false;                            // guarded by mu_
  std::thread worker_;
};

LoadOptions Bounded(uint64_t max_requests) {
  LoadOptions o;
  o.warmup = absl::ZeroDuration();
  o.duration = absl::Seconds(60);  // the count bound comes first
  o.max_requests = max_requests;
  return o;
}

TEST(RunLoad, ClosedLoopStopsAtMaxRequests) {
  FakeIssuer issuer;
  LoadOptions o = Bounded(500);
  o.concurrency = 8;
  const LoadResult r = RunLoad(issuer, o);
  EXPECT_TRUE(r.drained);
  EXPECT_EQ(r.requests, 500u);
  EXPECT_EQ(r.ok, 500u);
  EXPECT_EQ(r.ok_units, 1500u);
  EXPECT_EQ(r.errors_total(), 0u);
  EXPECT_EQ(issuer.started(), 500u + r.warmup_requests);
  EXPECT_GT(r.seconds, 0);
  EXPECT_GT(r.rate(), 0);
  EXPECT_LE(r.latency.p50_us, r.latency.p99_us);
}

TEST(RunLoad, CountsErrorsByCode) {
  FakeIssuer issuer(/*fail_odd=*/true);
  LoadOptions o = Bounded(400);
  o.concurrency = 3;
  const LoadResult r = RunLoad(issuer, o);
  EXPECT_EQ(r.requests, 400u);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors.at("UNAVAILABLE"), 200u);
  EXPECT_EQ(r.error_examples.at("UNAVAILABLE"), "odd");
  EXPECT_EQ(r.ok, 200u);
  EXPECT_EQ(r.ok_units, 600u);
}

TEST(RunLoad, OpenLoopSendsTheScheduledCount) {
  FakeIssuer issuer;
  LoadOptions o = Bounded(100);
  o.target_qps = 10'000;
  const LoadResult r = RunLoad(issuer, o);
  EXPECT_TRUE(r.drained);
  EXPECT_EQ(r.requests + r.unsent, 100u);
  EXPECT_EQ(r.unsent, 0u);
  EXPECT_EQ(issuer.started(), 100u);
  EXPECT_GE(r.max_send_lag_us, r.final_send_lag_us);
  // Every call is measured, from its scheduled time, and takes some time.
  EXPECT_EQ(r.latency.count, r.requests);
  EXPECT_GT(r.latency.min_us, 0);
  EXPECT_LE(r.latency.min_us, r.latency.p50_us);
  EXPECT_LE(r.latency.p50_us, r.latency.max_us);
}

TEST(RunLoad, OpenLoopWarmupIsNotMeasured) {
  FakeIssuer issuer;
  LoadOptions o = Bounded(50);
  o.target_qps = 1000;
  o.warmup = absl::Milliseconds(20);  // 20 calls due before the window
  const LoadResult r = RunLoad(issuer, o);
  EXPECT_EQ(r.warmup_requests, 20u);
  EXPECT_EQ(r.requests, 50u);
  EXPECT_EQ(issuer.started(), 70u);
}

}  // namespace
}  // namespace clickd
