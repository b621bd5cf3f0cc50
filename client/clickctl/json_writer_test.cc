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

}  // namespace
}  // namespace clickd
