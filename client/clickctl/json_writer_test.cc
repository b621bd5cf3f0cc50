#include "client/clickctl/json_writer.h"

#include <limits>

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(JsonWriter, BuildsOneLineObject) {
  JsonWriter inner;
  inner.Number("auc", 0.75);
  JsonWriter w;
  w.Integer("examples", 12).Number("logloss", std::numeric_limits<double>::quiet_NaN());
  w.String("name", "a\"b\\c\n").Bool("ok", true).Object("test", inner.Finish());
  EXPECT_EQ(w.Finish(),
            R"({"examples":12,"logloss":null,"name":"a\"b\\c\n","ok":true,"test":{"auc":0.75}})");
}

TEST(JsonWriter, EscapesControlCharacters) {
  EXPECT_EQ(JsonWriter::Quote(std::string("\x01", 1)), "\"\\u0001\"");
}

TEST(JsonWriter, ReplacesInvalidUtf8) {
  EXPECT_EQ(JsonWriter::Quote("a\xff"), "\"a\xef\xbf\xbd\"");
}

TEST(JsonWriter, DoublesRoundTrip) {
  const double third = 1.0 / 3.0;
  const std::string text = JsonWriter().Number("x", third).Finish();
  EXPECT_EQ(nlohmann::json::parse(text)["x"].get<double>(), third) << text;
  EXPECT_EQ(JsonWriter().Number("x", 0.1).Finish(), R"({"x":0.1})");
  EXPECT_EQ(JsonWriter().Number("x", 1e300).Finish(), R"({"x":1e+300})");
}

TEST(JsonWriter, FloatsPrintTheirShortestForm) {
  EXPECT_EQ(JsonWriter().Float("x", 0.3f).Finish(), R"({"x":0.3})");
  EXPECT_EQ(JsonWriter().Float("x", 1.0f / 3.0f).Finish(), R"({"x":0.33333334})");
  EXPECT_EQ(JsonWriter::FloatAsDouble(0.3f), 0.3);
  EXPECT_EQ(static_cast<float>(JsonWriter::FloatAsDouble(1e-40f)), 1e-40f);
}

TEST(JsonWriter, FloatValuedDoublesPrintTheFloatsShortestForm) {
  EXPECT_EQ(JsonWriter().FloatValued("x", static_cast<double>(0.3f)).Finish(), R"({"x":0.3})");
  EXPECT_EQ(JsonWriter().FloatValued("x", 0.1).Finish(), R"({"x":0.1})");  // not a float
  EXPECT_EQ(JsonWriter().FloatValued("x", 1.0 / 3.0).Finish(), R"({"x":0.3333333333333333})");
}

TEST(JsonWriter, NonFiniteIsNull) {
  EXPECT_EQ(JsonWriter()
                .Number("a", std::numeric_limits<double>::infinity())
                .Float("b", -std::numeric_limits<float>::infinity())
                .Finish(),
            R"({"a":null,"b":null})");
}

TEST(JsonWriter, BadObjectTextIsNull) {
  EXPECT_EQ(JsonWriter().Object("x", "{oops").Finish(), R"({"x":null})");
}

}  // namespace
}  // namespace clickd
