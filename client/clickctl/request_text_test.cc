#include "client/clickctl/request_text.h"

#include <fstream>

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(ParseExampleText, NamespacesFeaturesValuesAndIds) {
  auto e = ParseExampleText("user|country=FR,age:30  page|home |#12:0.5", "--context");
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->namespaces_size(), 3);
  const v1::Namespace& user = e->namespaces(0);
  EXPECT_EQ(user.name(), "user");
  ASSERT_EQ(user.features_size(), 2);
  EXPECT_EQ(user.features(0).name(), "country=FR");
  EXPECT_FALSE(user.features(0).has_value());  // unset means 1
  EXPECT_EQ(user.features(1).name(), "age");
  EXPECT_EQ(user.features(1).value(), 30.0f);
  EXPECT_EQ(e->namespaces(1).features(0).name(), "home");
  const v1::Namespace& anonymous = e->namespaces(2);
  EXPECT_EQ(anonymous.name(), "");
  EXPECT_EQ(anonymous.features(0).key_case(), v1::Feature::kId);
  EXPECT_EQ(anonymous.features(0).id(), 12u);
  EXPECT_EQ(anonymous.features(0).value(), 0.5f);
}

TEST(ParseExampleText, EmptyTextIsAnEmptyExample) {
  auto e = ParseExampleText("  ", "--context");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->namespaces_size(), 0);
}

TEST(ParseExampleText, ErrorsNameTheFlagAndThePart) {
  auto error = [](const std::string& text) {
    return std::string(ParseExampleText(text, "--example").status().message());
  };
  EXPECT_EQ(error("user"), "--example: \"user\" has no '|'; write NAMESPACE|FEATURE,...");
  EXPECT_EQ(error("user|"), "--example: namespace \"user\" has no features");
  EXPECT_EQ(error("a|x|y"),
            "--example: \"a|x|y\" has a second '|'; separate namespaces with a space");
  EXPECT_EQ(error("a|x,,y"), "--example: feature \"\" has an empty name");
  EXPECT_EQ(error("a|x:1:2"), "--example: feature \"x:1:2\" has more than one ':'");
  EXPECT_EQ(error("a|x:abc"), "--example: feature \"x:abc\": value \"abc\" is not a finite number");
  EXPECT_EQ(error("a|x:inf"), "--example: feature \"x:inf\": value \"inf\" is not a finite number");
  EXPECT_NE(error("a|#-1").find("not a 64-bit unsigned id"), std::string::npos);
}

TEST(ParseCandidatesText, SemicolonSeparatesCandidates) {
  auto c = ParseCandidatesText("ad|#7,brand=x; ad|#8 ", "--candidates");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 2u);
  EXPECT_EQ((*c)[0].namespaces(0).features_size(), 2);
  EXPECT_EQ((*c)[1].namespaces(0).features(0).id(), 8u);
  EXPECT_EQ(ParseCandidatesText("ad|a;;ad|b", "--candidates").status().message(),
            "--candidates candidate 1: is empty");
  EXPECT_FALSE(ParseCandidatesText("", "--candidates").ok());
}

TEST(ParseJsonMessage, InlineOrFile) {
  v1::PredictRequest request;
  ASSERT_TRUE(
      ParseJsonMessage(R"( {"model": "m", "candidates": [{}, {}]})", "--request_json", &request)
          .ok());
  EXPECT_EQ(request.model(), "m");
  EXPECT_EQ(request.candidates_size(), 2);

  const std::string path = ::testing::TempDir() + "/update.json";
  std::ofstream(path) << R"({"examples": [{"label": 1, "example": {"namespaces": [
      {"name": "u", "features": [{"name": "a", "value": 0.5}, {"id": "9"}]}]}}]})";
  v1::UpdateRequest update;
  const absl::Status s = ParseJsonMessage(path, "--request_json", &update);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(update.examples(0).example().namespaces(0).features(1).id(), 9u);

  EXPECT_EQ(ParseJsonMessage("/nonexistent.json", "--request_json", &update).code(),
            absl::StatusCode::kNotFound);
  const absl::Status unknown = ParseJsonMessage(R"({"modle": "m"})", "--request_json", &request);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("--request_json: not a clickd.v1.PredictRequest in JSON"),
            std::string::npos)
      << unknown;
}

TEST(ToJsonLine, UsesProtoFieldNamesAndShowsDefaultsOnOneLine) {
  v1::ModelConfig config;
  config.set_name("m");
  config.set_num_shards(4);
  config.mutable_ftrl()->set_lambda1_times_t(true);
  config.mutable_hashing()->set_bits(0);
  EXPECT_EQ(ToJsonLine(config),
            R"({"name":"m","optimizer":"","loss":"","ftrl":{"lambda1_times_t":true},)"
            R"("hashing":{"seed":"0","bits":0,"interactions":[]},"num_shards":4,)"
            R"("dense_namespaces":[],"dense_optimizer":"","variants":[]})");
}

}  // namespace
}  // namespace clickd
