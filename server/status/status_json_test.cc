#include "server/status/status_json.h"

#include <cmath>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace clickd::status {
namespace {

using nlohmann::json;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Parses without exceptions; a discarded value means invalid JSON.
json Parse(const std::string& text) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(parsed.is_discarded()) << text;
  return parsed;
}

StatusReport OneModel(const std::string& name) {
  StatusReport report;
  report.unix_seconds = 1000;
  report.sample_interval_seconds = 2;
  report.max_points = 300;
  ModelStatus m;
  m.config.name = name;
  report.models.push_back(m);
  return report;
}

TEST(StatusJson, EscapesAHostileModelName) {
  // Quotes, a backslash, markup that would end an inline script, control
  // characters, non-ASCII and an emoji (a surrogate pair in \u escapes).
  const std::string hostile =
      "a\"b\\c</script><script>alert('x')</script>&amp;\n\t\x01 caf\xc3\xa9 \xf0\x9f\x98\x80";
  const std::string text = StatusJson(OneModel(hostile));
  const json parsed = Parse(text);
  EXPECT_EQ(parsed["models"][0]["name"].get<std::string>(), hostile);
  // Nothing an HTML parser would act on, and only ASCII.
  EXPECT_EQ(text.find('<'), std::string::npos) << text;
  EXPECT_EQ(text.find('>'), std::string::npos) << text;
  EXPECT_EQ(text.find('&'), std::string::npos) << text;
  for (unsigned char c : text) EXPECT_LT(c, 0x80) << text;
  EXPECT_NE(text.find(R"(a\"b\\c\u003c/script\u003e)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(caf\u00e9 \ud83d\ude00)"), std::string::npos) << text;
}

TEST(StatusJson, NamesAModelsKafkaSourceWithItsLag) {
  StatusReport report = OneModel("m");
  EXPECT_TRUE(Parse(StatusJson(report))["models"][0]["kafka"].is_null());
  report.models[0].kafka = KafkaStatus{"clicks", 3, 1234};
  const json kafka = Parse(StatusJson(report))["models"][0]["kafka"];
  EXPECT_EQ(kafka["topic"].get<std::string>(), "clicks");
  EXPECT_EQ(kafka["partitions"].get<int>(), 3);
  EXPECT_EQ(kafka["lag_records"].get<int64_t>(), 1234);
}

TEST(StatusJson, ReplacesInvalidUtf8) {
  const std::string text = StatusJson(OneModel("bad\xff\xfe name"));
  const json parsed = Parse(text);
  EXPECT_EQ(parsed["models"][0]["name"].get<std::string>(),
            "bad\xef\xbf\xbd\xef\xbf\xbd name");  // one U+FFFD per bad byte
}

TEST(StatusJson, WritesNumbersThatAreNotFiniteAsNull) {
  StatusReport report = OneModel("m");
  report.unix_seconds = kNaN;
  ModelStatus& m = report.models[0];
  m.update_rate = kInf;
  m.prediction_rate = -kInf;
  m.lifetime.logloss = kNaN;
  m.lifetime.auc = 0.75;
  m.lifetime.calibration = kInf;
  m.recent.logloss = 0.5;
  StatusPoint p;
  p.unix_seconds = 10;
  p.logloss = kInf;
  p.auc = kNaN;
  p.calibration = 1.25;
  p.recent_logloss = -kInf;
  m.points = {p};
  const std::string text = StatusJson(report);
  EXPECT_EQ(text.find("nan"), std::string::npos) << text;
  EXPECT_EQ(text.find("inf"), std::string::npos) << text;
  EXPECT_EQ(text.find("NaN"), std::string::npos) << text;
  EXPECT_EQ(text.find("Infinity"), std::string::npos) << text;
  const json parsed = Parse(text);
  const json& model = parsed["models"][0];
  EXPECT_TRUE(parsed["unix_seconds"].is_null());
  EXPECT_TRUE(model["update_rate"].is_null());
  EXPECT_TRUE(model["prediction_rate"].is_null());
  EXPECT_TRUE(model["lifetime"]["logloss"].is_null());
  EXPECT_EQ(model["lifetime"]["auc"].get<double>(), 0.75);
  EXPECT_TRUE(model["lifetime"]["calibration"].is_null());
  EXPECT_EQ(model["recent"]["logloss"].get<double>(), 0.5);
  EXPECT_TRUE(model["recent"]["auc"].is_null());  // a default summary has NaN
  EXPECT_EQ(model["points"]["t"], json::array({10.0}));
  EXPECT_EQ(model["points"]["logloss"], json::array({nullptr}));
  EXPECT_EQ(model["points"]["auc"], json::array({nullptr}));
  EXPECT_EQ(model["points"]["calibration"], json::array({1.25}));
  EXPECT_EQ(model["points"]["recent_logloss"], json::array({nullptr}));
}

TEST(StatusJson, DescribesConfigSizeAndPoints) {
  StatusReport report = OneModel("ctr");
  ModelStatus& m = report.models[0];
  m.config.optimizer.ftrl.alpha = 0.05;
  m.config.hashing.bits = 22;
  m.config.hashing.interactions = {{"user", "ad"}};
  m.stats.coordinates = 1234;
  m.stats.bytes = 56789;
  m.stats.updates = 40;
  m.update_examples = 40;
  m.predictions = 7;
  m.update_rate = 20;
  m.prediction_rate = 3.5;
  for (int i = 0; i < 3; ++i) {
    StatusPoint p;
    p.unix_seconds = 100 + 2 * i;
    p.update_examples = 10 * i;
    p.predictions = i;
    p.recent_auc = 0.6 + 0.1 * i;
    m.points.push_back(p);
  }
  const json parsed = Parse(StatusJson(report));
  EXPECT_EQ(parsed["sample_interval_seconds"].get<double>(), 2);
  EXPECT_EQ(parsed["max_points"].get<int>(), 300);
  const json& model = parsed["models"][0];
  EXPECT_EQ(model["config"]["optimizer"], "ftrl");
  EXPECT_EQ(model["config"]["loss"], "logistic");
  EXPECT_EQ(model["config"]["hyperparameters"]["alpha"].get<double>(), 0.05);
  EXPECT_EQ(model["config"]["hyperparameters"]["beta"].get<double>(), 1.0);
  EXPECT_EQ(model["config"]["hash_bits"].get<int>(), 22);
  EXPECT_EQ(model["config"]["interactions"].get<int>(), 1);
  EXPECT_EQ(model["config"]["shards"].get<int>(), 16);
  EXPECT_EQ(model["coordinates"].get<uint64_t>(), 1234u);
  EXPECT_EQ(model["bytes"].get<uint64_t>(), 56789u);
  EXPECT_EQ(model["update_examples"].get<uint64_t>(), 40u);
  EXPECT_EQ(model["predictions"].get<uint64_t>(), 7u);
  EXPECT_EQ(model["update_rate"].get<double>(), 20);
  EXPECT_EQ(model["prediction_rate"].get<double>(), 3.5);
  EXPECT_EQ(model["points"]["t"], json::array({100.0, 102.0, 104.0}));
  EXPECT_EQ(model["points"]["update_examples"], json::array({0, 10, 20}));
  ASSERT_EQ(model["points"]["recent_auc"].size(), 3u);
  EXPECT_DOUBLE_EQ(model["points"]["recent_auc"][2].get<double>(), 0.8);
}

TEST(StatusJson, NamesEachOptimizersHyperparameters) {
  StatusReport report = OneModel("m");
  ModelConfig& c = report.models[0].config;
  ASSERT_TRUE(SetOptimizerName("adagrad", &c).ok());
  c.optimizer.adagrad.eta = 0.25;
  json h = Parse(StatusJson(report))["models"][0]["config"]["hyperparameters"];
  EXPECT_EQ(h, json({{"eta", 0.25}, {"delta", 1.0}, {"lambda", 0.0}}));

  ASSERT_TRUE(SetOptimizerName("pa", &c).ok());
  c.loss = LossType::kHinge;
  json model = Parse(StatusJson(report))["models"][0];
  EXPECT_EQ(model["config"]["optimizer"], "pa");
  EXPECT_EQ(model["config"]["loss"], "hinge");
  EXPECT_EQ(model["config"]["hyperparameters"], json({{"c", 1.0}}));

  ASSERT_TRUE(SetOptimizerName("ada_fd", &c).ok());
  model = Parse(StatusJson(report))["models"][0];
  EXPECT_EQ(model["config"]["optimizer"], "ada_fd");
  EXPECT_EQ(model["config"]["hyperparameters"]["tau"].get<int>(), 10);
}

TEST(StatusJson, NoModels) {
  StatusReport report;
  const json parsed = Parse(StatusJson(report));
  EXPECT_EQ(parsed["models"], json::array());
}

TEST(StatusJson, WritesTheLoadBesideItsLimitsOrNullWithoutOne) {
  StatusReport report;
  EXPECT_TRUE(Parse(StatusJson(report))["load"].is_null());
  report.load = ServerLoad{.queued_calls = 3,
                           .running_calls = 2,
                           .max_queued_calls = 1024,
                           .worker_threads = 8,
                           .open_streams = 5,
                           .max_open_streams = 256};
  EXPECT_EQ(Parse(StatusJson(report))["load"], json({{"queued_calls", 3},
                                                     {"running_calls", 2},
                                                     {"max_queued_calls", 1024},
                                                     {"worker_threads", 8},
                                                     {"open_streams", 5},
                                                     {"max_open_streams", 256}}));
}

}  // namespace
}  // namespace clickd::status
