// The config encoding's memory budget (version 9) and state encoding
// (version 10): round trips, and older encodings read as unbounded and
// float. Version 11 appends 20 bytes of Bloom filter parameters after them,
// and version 12 (written only for a model with a TTL) 8 bytes of
// memory.ttl_rounds. The other fields' tests are in snapshot_test.cc.
#include "core/persist/model_config_codec.h"

#include <string>

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(ModelConfigEncoding, RoundTripsTheMemoryBudget) {
  ModelConfig config;
  config.name = "budgeted";
  config.memory.max_bytes = uint64_t{3} << 30;
  std::string bytes;
  EncodeModelConfig(config, &bytes);
  ASSERT_EQ(bytes[4], 11);
  auto decoded = DecodeModelConfig(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->memory.max_bytes, uint64_t{3} << 30);
  std::string again;
  EncodeModelConfig(*decoded, &again);
  EXPECT_EQ(again, bytes);
  // Out of range is a corrupt config.
  std::string small = bytes;
  // The budget is followed by the encoding (4) and the Bloom parameters (20).
  small.replace(small.size() - 32, 8, std::string("\x10\x00\x00\x00\x00\x00\x00\x00", 8));
  auto refused = DecodeModelConfig(small);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(refused.status().message().find("memory.max_bytes is 16"), std::string::npos)
      << refused.status();
}

TEST(ModelConfigEncoding, TheTtlNeedsVersionTwelveAndOnlyItHasOne) {
  ModelConfig config;
  config.name = "ttl";
  config.memory.ttl_rounds = 5000;
  std::string v12;
  EncodeModelConfig(config, &v12);
  ASSERT_EQ(v12[4], 12);
  auto decoded = DecodeModelConfig(v12);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->memory.ttl_rounds, 5000u);
  std::string again;
  EncodeModelConfig(*decoded, &again);
  EXPECT_EQ(again, v12);
  // Without its last 8 bytes it is version 11's encoding: no TTL.
  std::string v11 = v12.substr(0, v12.size() - 8);
  v11[4] = 11;
  decoded = DecodeModelConfig(v11);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->memory.ttl_rounds, 0u);
  // Version 12 with a TTL of 0 (one config, two encodings) or of 10, or cut
  // short, is corrupt.
  std::string zero = v12;
  zero.replace(zero.size() - 8, 8, std::string(8, '\0'));
  EXPECT_EQ(DecodeModelConfig(zero).status().code(), absl::StatusCode::kDataLoss);
  std::string ten = v12;
  ten.replace(ten.size() - 8, 8, std::string("\x0a\x00\x00\x00\x00\x00\x00\x00", 8));
  auto refused = DecodeModelConfig(ten);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(refused.status().message().find("memory.ttl_rounds is 10"), std::string::npos)
      << refused.status();
  EXPECT_EQ(DecodeModelConfig(v12.substr(0, v12.size() - 3)).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(ModelConfigEncoding, ADeadLetterTopicNeedsVersionFourteenAndRoundTrips) {
  ModelConfig config;
  config.name = "kafka";
  config.kafka.brokers = "127.0.0.1:9092";
  config.kafka.topic = "clicks";
  config.kafka.dead_letter_topic = "clicks_refused";
  std::string v14;
  EncodeModelConfig(config, &v14);
  ASSERT_EQ(v14[4], 14);
  auto decoded = DecodeModelConfig(v14);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->kafka.dead_letter_topic, "clicks_refused");
  std::string again;
  EncodeModelConfig(*decoded, &again);
  EXPECT_EQ(again, v14);
  // The topic itself is refused, naming the field.
  config.kafka.dead_letter_topic = "clicks";
  const absl::Status same = ValidateModelConfig(config);
  EXPECT_EQ(same.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(same.message().find("kafka.dead_letter_topic"), std::string::npos) << same;
  config.kafka.dead_letter_topic = std::string(250, 'x');
  EXPECT_NE(ValidateModelConfig(config).message().find("the limit is 249"), std::string::npos);
}

TEST(ModelConfigEncoding, AFeedbackTopicAndSaslNeedVersionSixteenAndRoundTrip) {
  ModelConfig config;
  config.name = "kafka";
  config.kafka.brokers = "127.0.0.1:9092";
  config.kafka.topic = "clicks";
  config.feedback.ttl_seconds = 60;
  config.kafka.feedback_topic = "labels";
  config.kafka.feedback_format = KafkaFormat::kProto;
  config.kafka.security_protocol = "sasl_ssl";
  config.kafka.sasl_mechanism = "SCRAM-SHA-512";
  config.kafka.sasl_credentials_file = "/etc/clickd/kafka.credentials";
  ASSERT_TRUE(ValidateModelConfig(config).ok()) << ValidateModelConfig(config);
  std::string v16;
  EncodeModelConfig(config, &v16);
  ASSERT_EQ(v16[4], 16);
  auto decoded = DecodeModelConfig(v16);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->kafka.feedback_topic, "labels");
  EXPECT_EQ(decoded->kafka.feedback_format, KafkaFormat::kProto);
  EXPECT_EQ(decoded->kafka.sasl_mechanism, "SCRAM-SHA-512");
  EXPECT_EQ(decoded->kafka.sasl_credentials_file, "/etc/clickd/kafka.credentials");
  EXPECT_EQ(decoded->feedback.id_tag, 0u);
  std::string again;
  EncodeModelConfig(*decoded, &again);
  EXPECT_EQ(again, v16);
  // With an id tag too.
  config.feedback.id_tag = 77;
  std::string tagged;
  EncodeModelConfig(config, &tagged);
  auto with_tag = DecodeModelConfig(tagged);
  ASSERT_TRUE(with_tag.ok()) << with_tag.status();
  EXPECT_EQ(with_tag->feedback.id_tag, 77u);
  // Without these fields, the older encoding.
  ModelConfig plain = config;
  plain.kafka.feedback_topic.clear();
  plain.kafka.feedback_format = KafkaFormat::kJson;
  plain.kafka.security_protocol.clear();
  plain.kafka.sasl_mechanism.clear();
  plain.kafka.sasl_credentials_file.clear();
  std::string v15;
  EncodeModelConfig(plain, &v15);
  EXPECT_EQ(v15[4], 15);
}

TEST(ModelConfigEncoding, FeedbackTopicAndSaslMistakesNameTheField) {
  ModelConfig config;
  config.name = "kafka";
  config.kafka.brokers = "127.0.0.1:9092";
  config.kafka.topic = "clicks";
  config.kafka.feedback_topic = "labels";
  auto message = [&] { return std::string(ValidateModelConfig(config).message()); };
  EXPECT_NE(message().find("kafka.feedback_topic needs the impression-to-click loop"),
            std::string::npos)
      << message();
  config.feedback.ttl_seconds = 60;
  config.kafka.feedback_topic = "clicks";
  EXPECT_NE(message().find("kafka.feedback_topic is kafka.topic"), std::string::npos) << message();
  config.kafka.feedback_topic = "labels";
  config.kafka.feedback_format = KafkaFormat::kVw;
  EXPECT_NE(message().find("kafka.feedback_format is vw; must be json or proto"), std::string::npos)
      << message();
  config.kafka.feedback_format = KafkaFormat::kJson;
  config.kafka.security_protocol = "sasl_plaintext";
  EXPECT_NE(message().find("kafka.sasl_mechanism is \"\"; with sasl_plaintext it must be PLAIN"),
            std::string::npos)
      << message();
  config.kafka.sasl_mechanism = "PLAIN";
  EXPECT_NE(message().find("kafka.sasl_credentials_file is empty"), std::string::npos) << message();
  config.kafka.security_protocol = "ssl";
  config.kafka.sasl_credentials_file = "/x";
  EXPECT_NE(message().find("need kafka.security_protocol sasl_plaintext or sasl_ssl"),
            std::string::npos)
      << message();
}

TEST(ModelConfigEncoding, AKafkaSourceNeedsVersionThirteenAndRoundTrips) {
  ModelConfig config;
  config.name = "kafka";
  config.kafka.brokers = "127.0.0.1:9092,127.0.0.1:9093";
  config.kafka.topic = "clicks";
  config.kafka.group = "g";
  config.kafka.format = KafkaFormat::kJson;
  config.kafka.security_protocol = "ssl";
  config.kafka.ssl_ca_location = "/etc/ca.pem";
  std::string v13;
  EncodeModelConfig(config, &v13);
  ASSERT_EQ(v13[4], 13);
  auto decoded = DecodeModelConfig(v13);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->kafka.brokers, config.kafka.brokers);
  EXPECT_EQ(decoded->kafka.topic, "clicks");
  EXPECT_EQ(decoded->kafka.group, "g");
  EXPECT_EQ(decoded->kafka.format, KafkaFormat::kJson);
  EXPECT_EQ(decoded->kafka.security_protocol, "ssl");
  EXPECT_EQ(decoded->kafka.ssl_ca_location, "/etc/ca.pem");
  EXPECT_EQ(decoded->memory.ttl_rounds, 0u);
  std::string again;
  EncodeModelConfig(*decoded, &again);
  EXPECT_EQ(again, v13);
  // Without a source a config stays in version 11.
  config.kafka = KafkaSourceConfig{};
  std::string v11;
  EncodeModelConfig(config, &v11);
  EXPECT_EQ(v11[4], 11);
  // Cut short is corrupt.
  EXPECT_EQ(DecodeModelConfig(v13.substr(0, v13.size() - 2)).status().code(),
            absl::StatusCode::kDataLoss);
}

// The impression ids' tag (issue 33, N7) is written in version 15, and
// only when set: a model without it keeps the encoding older builds read.
TEST(ModelConfigEncoding, AnImpressionIdTagNeedsVersionFifteenAndRoundTrips) {
  ModelConfig config;
  config.name = "clicks";
  config.feedback.ttl_seconds = 60;
  std::string v11;
  EncodeModelConfig(config, &v11);
  EXPECT_EQ(v11[4], 11);
  config.feedback.id_tag = 0xabcdef;
  std::string v15;
  EncodeModelConfig(config, &v15);
  ASSERT_EQ(v15[4], 15);
  auto decoded = DecodeModelConfig(v15);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->feedback.id_tag, 0xabcdefu);
  EXPECT_FALSE(decoded->kafka.enabled());
  std::string again;
  EncodeModelConfig(*decoded, &again);
  EXPECT_EQ(again, v15);
  // A tag of 0 in version 15, or one above 24 bits, is damage.
  std::string zero = v15;
  zero.replace(zero.size() - 4, 4, std::string(4, '\0'));
  EXPECT_EQ(DecodeModelConfig(zero).status().code(), absl::StatusCode::kDataLoss);
  std::string wide = v15;
  wide[wide.size() - 1] = 1;  // 0x01abcdef
  EXPECT_EQ(DecodeModelConfig(wide).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeModelConfig(v15.substr(0, v15.size() - 2)).status().code(),
            absl::StatusCode::kDataLoss);
}

// Version 8 (written before the budget) reads as unbounded.
TEST(ModelConfigEncoding, VersionEightReadsAsUnbounded) {
  ModelConfig config;
  config.name = "old";
  config.memory.max_bytes = 1 << 20;
  std::string v11;
  EncodeModelConfig(config, &v11);
  std::string v10 = v11.substr(0, v11.size() - 20);
  std::string v9 = v10.substr(0, v10.size() - 4);
  v9[4] = 9;
  std::string v8 = v9.substr(0, v9.size() - 8);
  v8[4] = 8;
  auto decoded = DecodeModelConfig(v8);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->memory.max_bytes, 0u);
  EXPECT_EQ(decoded->name, "old");
  // A v9 encoding cut short of the budget does not parse.
  std::string cut = v9.substr(0, v9.size() - 8);
  EXPECT_EQ(DecodeModelConfig(cut).status().code(), absl::StatusCode::kDataLoss);
}

TEST(ModelConfigEncoding, RoundTripsTheStateEncoding) {
  ModelConfig config;
  config.name = "compact";
  config.memory.encoding = StateEncoding::kCompact;
  std::string bytes;
  EncodeModelConfig(config, &bytes);
  auto decoded = DecodeModelConfig(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->memory.encoding, StateEncoding::kCompact);
  // Version 9 (written before the encoding) reads as float.
  std::string v9 = bytes.substr(0, bytes.size() - 24);
  v9[4] = 9;
  decoded = DecodeModelConfig(v9);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->memory.encoding, StateEncoding::kFloat);
  // An unknown encoding, or compact for another optimizer, is a corrupt config.
  std::string unknown = bytes;
  unknown[unknown.size() - 24] = 7;
  auto refused = DecodeModelConfig(unknown);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(refused.status().message().find("memory.encoding is 7"), std::string::npos)
      << refused.status();
  config.optimizer.type = OptimizerType::kAdagrad;
  bytes.clear();
  EncodeModelConfig(config, &bytes);
  refused = DecodeModelConfig(bytes);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(refused.status().message().find("must be ftrl"), std::string::npos) << refused.status();
}

}  // namespace
}  // namespace clickd

namespace clickd {
namespace {

// Version 17 carries the factorization; a config without one keeps the
// version it had, so older builds still read it.
TEST(ModelConfigEncoding, AFactorizationNeedsVersionSeventeenAndRoundTrips) {
  ModelConfig config;
  config.name = "ffm";
  std::string plain;
  EncodeModelConfig(config, &plain);
  EXPECT_EQ(plain[4], 11);
  config.factorization.kind = FactorizationConfig::Kind::kFfm;
  config.factorization.dim = 8;
  config.factorization.fields = {"user", "site", "ad"};
  config.factorization.init_scale = 0.25;
  config.factorization.init_seed = 77;
  config.factorization.eta = 0.05;
  config.factorization.l2 = 1e-4;
  config.factorization.normalize = false;
  std::string v17;
  EncodeModelConfig(config, &v17);
  ASSERT_EQ(v17[4], 17);
  auto decoded = DecodeModelConfig(v17);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  const FactorizationConfig& f = decoded->factorization;
  EXPECT_EQ(f.kind, FactorizationConfig::Kind::kFfm);
  EXPECT_EQ(f.dim, 8);
  EXPECT_EQ(f.fields, (std::vector<std::string>{"user", "site", "ad"}));
  EXPECT_EQ(f.init_scale, 0.25);
  EXPECT_EQ(f.init_seed, 77u);
  EXPECT_EQ(f.eta, 0.05);
  EXPECT_EQ(f.l2, 1e-4);
  EXPECT_FALSE(f.normalize);
  EXPECT_EQ(decoded->feedback.id_tag, 0u);
  std::string again;
  EncodeModelConfig(*decoded, &again);
  EXPECT_EQ(again, v17);
  // With an id tag too.
  config.feedback.ttl_seconds = 60;
  config.feedback.id_tag = 0x1234;
  std::string tagged;
  EncodeModelConfig(config, &tagged);
  auto tagged_decoded = DecodeModelConfig(tagged);
  ASSERT_TRUE(tagged_decoded.ok()) << tagged_decoded.status();
  EXPECT_EQ(tagged_decoded->feedback.id_tag, 0x1234u);
  EXPECT_EQ(tagged_decoded->factorization.fields.size(), 3u);
  // Kind none in version 17, an invalid dim, or a cut tail are damage.
  const size_t kind_at = v17.size() - (4 + 4 + 4 + 3 * 4 + 4 + 4 + 2 + 8 + 8 + 8 + 8);
  std::string none = v17;
  none.replace(kind_at, 4, std::string(4, '\0'));
  EXPECT_EQ(DecodeModelConfig(none).status().code(), absl::StatusCode::kDataLoss);
  std::string zero_dim = v17;
  zero_dim.replace(kind_at + 4, 4, std::string(4, '\0'));
  EXPECT_EQ(DecodeModelConfig(zero_dim).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeModelConfig(v17.substr(0, v17.size() - 3)).status().code(),
            absl::StatusCode::kDataLoss);
}

// Version 18 adds the normalisation (on by default); a factorization
// without it stays in version 17, whose readers score as this build does,
// and a version 17 config decodes without it.
TEST(ModelConfigEncoding, NormalizationNeedsVersionEighteen) {
  ModelConfig config;
  config.name = "ffm";
  config.factorization.kind = FactorizationConfig::Kind::kFm;
  config.factorization.fields = {"user", "ad"};
  ASSERT_TRUE(config.factorization.normalize);
  std::string v18;
  EncodeModelConfig(config, &v18);
  ASSERT_EQ(v18[4], 18);
  auto decoded = DecodeModelConfig(v18);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(decoded->factorization.normalize);
  std::string again;
  EncodeModelConfig(*decoded, &again);
  EXPECT_EQ(again, v18);
  // The flag is the last 4 bytes; a 0 there is not how this config is
  // written (that is version 17), so it is damage, as is a cut flag.
  std::string zero = v18;
  zero.replace(zero.size() - 4, 4, std::string(4, '\0'));
  EXPECT_EQ(DecodeModelConfig(zero).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeModelConfig(v18.substr(0, v18.size() - 2)).status().code(),
            absl::StatusCode::kDataLoss);
  // Off: version 17, decoded off.
  config.factorization.normalize = false;
  std::string v17;
  EncodeModelConfig(config, &v17);
  ASSERT_EQ(v17[4], 17);
  EXPECT_EQ(v17.size() + 4, v18.size());
  auto old = DecodeModelConfig(v17);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_FALSE(old->factorization.normalize);
}

}  // namespace
}  // namespace clickd
