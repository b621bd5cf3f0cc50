#include "core/formats/parse.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

using ::testing::ElementsAre;
using ::testing::FieldsAre;

// Flattens a feature for matching: (name, id, has_id, value).
auto Named(std::string name, float value) { return FieldsAre(name, 0u, false, value, false); }
auto Id(uint64_t id, float value) { return FieldsAre("", id, true, value, false); }

LabeledExample MustParse(InputFormat format, std::string_view line) {
  LabeledExample example;
  absl::Status status = ParseLine(format, line, &example);
  EXPECT_TRUE(status.ok()) << line << ": " << status;
  return example;
}

std::string ErrorOf(InputFormat format, std::string_view line) {
  LabeledExample example;
  absl::Status status = ParseLine(format, line, &example);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << line;
  return std::string(status.message());
}

TEST(ParseInputFormatTest, NamesRoundTrip) {
  for (InputFormat format : {InputFormat::kLibsvm, InputFormat::kVw, InputFormat::kCriteo}) {
    EXPECT_EQ(*ParseInputFormat(InputFormatName(format)), format);
  }
  EXPECT_EQ(*ParseInputFormat("vw"), InputFormat::kVw);
}

TEST(ParseInputFormatTest, RejectsUnknownName) {
  absl::StatusOr<InputFormat> format = ParseInputFormat("svmlight");
  EXPECT_EQ(format.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(format.status().message(),
            "input format \"svmlight\" is unknown; expected libsvm, vw or criteo");
}

// ---------------------------------------------------------------------------
// LIBSVM

TEST(ParseLibsvmTest, ParsesIdsIntoOneUnnamedNamespace) {
  LabeledExample example =
      MustParse(InputFormat::kLibsvm, "1 3:0.5\t18446744073709551615:2  7:-1e-3");
  EXPECT_EQ(example.label, 1.0f);
  EXPECT_EQ(example.importance, 1.0f);
  ASSERT_EQ(example.example.namespaces.size(), 1u);
  EXPECT_EQ(example.example.namespaces[0].name, "");
  EXPECT_THAT(example.example.namespaces[0].features,
              ElementsAre(Id(3, 0.5f), Id(18446744073709551615u, 2.0f), Id(7, -1e-3f)));
}

TEST(ParseLibsvmTest, AcceptsPlusSignQidAndComment) {
  LabeledExample example = MustParse(InputFormat::kLibsvm, "+1 qid:42 5:1 # 6:2 is ignored");
  EXPECT_EQ(example.label, 1.0f);
  EXPECT_THAT(example.example.namespaces[0].features, ElementsAre(Id(5, 1.0f)));
}

TEST(ParseLibsvmTest, AcceptsLabelWithoutFeatures) {
  LabeledExample example = MustParse(InputFormat::kLibsvm, "-1");
  EXPECT_EQ(example.label, -1.0f);
  ASSERT_EQ(example.example.namespaces.size(), 1u);
  EXPECT_TRUE(example.example.namespaces[0].features.empty());
}

TEST(ParseLibsvmTest, RoundsTinyValuesToZero) {
  LabeledExample example = MustParse(InputFormat::kLibsvm, "0 1:1e-60");
  EXPECT_THAT(example.example.namespaces[0].features, ElementsAre(Id(1, 0.0f)));
}

TEST(ParseLibsvmTest, ReportsErrors) {
  const InputFormat f = InputFormat::kLibsvm;
  EXPECT_EQ(ErrorOf(f, "x 1:1"), "label \"x\" is not a number");
  EXPECT_EQ(ErrorOf(f, "nan 1:1"), "label \"nan\" is nan; must be finite");
  EXPECT_EQ(ErrorOf(f, "-inf 1:1"), "label \"-inf\" is inf; must be finite");
  EXPECT_EQ(ErrorOf(f, "1e40 1:1"), "label \"1e40\" is out of range for a float");
  EXPECT_EQ(ErrorOf(f, "# only a comment"), "missing label");
  EXPECT_EQ(ErrorOf(f, "1 1:1 2:1 12:abc"), "feature 3 \"12:abc\": value is not a number");
  EXPECT_EQ(ErrorOf(f, "1 1:1 7"), "feature 2 \"7\": expected index:value");
  EXPECT_EQ(ErrorOf(f, "1 4:nan"), "feature 1 \"4:nan\": value is nan; must be finite");
  EXPECT_EQ(ErrorOf(f, "1 4:inf"), "feature 1 \"4:inf\": value is inf; must be finite");
  EXPECT_EQ(ErrorOf(f, "1 4:"), "feature 1 \"4:\": value is not a number");
  EXPECT_EQ(ErrorOf(f, "1 -4:1"), "feature 1 \"-4:1\": index is not an unsigned 64-bit integer");
  EXPECT_EQ(ErrorOf(f, "1 18446744073709551616:1"),
            "feature 1 \"18446744073709551616:1\": index is not an unsigned 64-bit integer");
  EXPECT_EQ(ErrorOf(f, "1 a:1"), "feature 1 \"a:1\": index is not an unsigned 64-bit integer");
  // qid is only accepted right after the label.
  EXPECT_EQ(ErrorOf(f, "1 1:1 qid:3"),
            "feature 2 \"qid:3\": index is not an unsigned 64-bit integer");
}

// ---------------------------------------------------------------------------
// Vowpal Wabbit

TEST(ParseVwTest, ParsesLabelImportanceTagAndNamespaces) {
  LabeledExample example =
      MustParse(InputFormat::kVw, "1 2.5 'row7|user age:3 country |ad:0.5 9:4\tx | bias");
  EXPECT_EQ(example.label, 1.0f);
  EXPECT_EQ(example.importance, 2.5f);
  const std::vector<Namespace>& ns = example.example.namespaces;
  ASSERT_EQ(ns.size(), 3u);
  EXPECT_EQ(ns[0].name, "user");
  EXPECT_THAT(ns[0].features, ElementsAre(Named("age", 3.0f), Named("country", 1.0f)));
  EXPECT_EQ(ns[1].name, "ad");
  // "9" looks like an index but VW names are always hashed as strings.
  EXPECT_THAT(ns[1].features, ElementsAre(Named("9", 2.0f), Named("x", 0.5f)));
  EXPECT_EQ(ns[2].name, "");
  EXPECT_THAT(ns[2].features, ElementsAre(Named("bias", 1.0f)));
}

TEST(ParseVwTest, AcceptsTagsWithoutQuoteAndEmptyNamespaces) {
  LabeledExample example = MustParse(InputFormat::kVw, "-1 row7 |a |b c||");
  EXPECT_EQ(example.label, -1.0f);
  EXPECT_EQ(example.importance, 1.0f);
  const std::vector<Namespace>& ns = example.example.namespaces;
  ASSERT_EQ(ns.size(), 4u);
  EXPECT_EQ(ns[0].name, "a");
  EXPECT_TRUE(ns[0].features.empty());
  EXPECT_THAT(ns[1].features, ElementsAre(Named("c", 1.0f)));
  EXPECT_EQ(ns[2].name, "");
  EXPECT_EQ(ns[3].name, "");
}

TEST(ParseVwTest, AcceptsTagTouchingTheBarAndZeroImportance) {
  LabeledExample example = MustParse(InputFormat::kVw, "0 0 'id|f a");
  EXPECT_EQ(example.importance, 0.0f);
  EXPECT_THAT(example.example.namespaces[0].features, ElementsAre(Named("a", 1.0f)));
}

// The namespace scanner finds each token's end, its first ':' and the next
// '|' in one pass: a token or a header may end right at a '|', tabs count
// as spaces, a namespace may hold only blanks, and a ':' counts only in the
// token it is in.
TEST(ParseVwTest, TokensEndAtSpacesTabsAndBars) {
  LabeledExample example = MustParse(InputFormat::kVw, "1 |f:2|g a:3|h\tb\tc:0.5 |\t \t|i d:4 \t");
  const std::vector<Namespace>& ns = example.example.namespaces;
  ASSERT_EQ(ns.size(), 5u);
  EXPECT_EQ(ns[0].name, "f");
  EXPECT_TRUE(ns[0].features.empty());
  EXPECT_EQ(ns[1].name, "g");
  EXPECT_THAT(ns[1].features, ElementsAre(Named("a", 3.0f)));
  EXPECT_EQ(ns[2].name, "h");
  EXPECT_THAT(ns[2].features, ElementsAre(Named("b", 1.0f), Named("c", 0.5f)));
  EXPECT_EQ(ns[3].name, "");
  EXPECT_TRUE(ns[3].features.empty());
  EXPECT_EQ(ns[4].name, "i");
  EXPECT_THAT(ns[4].features, ElementsAre(Named("d", 4.0f)));
  const InputFormat f = InputFormat::kVw;
  EXPECT_EQ(ErrorOf(f, "1 |f a:|g b"), "namespace \"f\" feature 1 \"a:\": value is not a number");
  EXPECT_EQ(ErrorOf(f, "1 |f a b:1:\tc"),
            "namespace \"f\" feature 2 \"b:1:\": value is not a number");
}

TEST(ParseVwTest, ReportsErrors) {
  const InputFormat f = InputFormat::kVw;
  EXPECT_EQ(ErrorOf(f, "|f a"), "missing label");
  EXPECT_EQ(ErrorOf(f, "  |f a"), "missing label");
  EXPECT_EQ(ErrorOf(f, "'tag |f a"), "missing label");
  EXPECT_EQ(ErrorOf(f, "1 1:1 2:1"), "missing '|': expected at least one namespace");
  EXPECT_EQ(ErrorOf(f, "nan |f a"), "label \"nan\" is nan; must be finite");
  EXPECT_EQ(ErrorOf(f, "1 -2 |f a"), "importance \"-2\" is negative");
  EXPECT_EQ(ErrorOf(f, "1 inf |f a"), "importance \"inf\" is inf; must be finite");
  EXPECT_EQ(ErrorOf(f, "1 2 3 |f a"),
            "unexpected \"3\" in the label section; expected label [importance] [tag]");
  EXPECT_EQ(ErrorOf(f, "1 'a 'b |f a"),
            "unexpected \"'b\" in the label section; expected label [importance] [tag]");
  EXPECT_EQ(ErrorOf(f, "1 |f a b:x"), "namespace \"f\" feature 2 \"b:x\": value is not a number");
  EXPECT_EQ(ErrorOf(f, "1 |f a:nan"),
            "namespace \"f\" feature 1 \"a:nan\": value is nan; must be finite");
  EXPECT_EQ(ErrorOf(f, "1 |f a:1:2"), "namespace \"f\" feature 1 \"a:1:2\": value is not a number");
  EXPECT_EQ(ErrorOf(f, "1 |f :2"), "namespace \"f\" feature 1 \":2\": empty name");
  EXPECT_EQ(ErrorOf(f, "1 |f:x a"), "namespace \"f:x\": scale is not a number");
  EXPECT_EQ(ErrorOf(f, "1 |f:1e30 a:1e30"),
            "namespace \"f\" feature 1 \"a:1e30\": value times the namespace scale is not finite");
}

// ---------------------------------------------------------------------------
// Criteo

// A Criteo line with every integer and categorical cell empty unless set.
class CriteoLine {
 public:
  CriteoLine() : fields_(40) { fields_[0] = "0"; }
  CriteoLine& Label(std::string value) { return Set(0, std::move(value)); }
  CriteoLine& I(int j, std::string value) { return Set(j, std::move(value)); }
  CriteoLine& C(int j, std::string value) { return Set(13 + j, std::move(value)); }
  std::string str() const { return absl::StrJoin(fields_, "\t"); }

 private:
  CriteoLine& Set(int index, std::string value) {
    fields_[index] = std::move(value);
    return *this;
  }
  std::vector<std::string> fields_;
};

TEST(ParseCriteoTest, BucketsIntegersAndKeepsCategoricals) {
  const std::string line = CriteoLine()
                               .Label("1")
                               .I(1, "-1")
                               .I(2, "0")
                               .I(3, "2")
                               .I(4, "3")
                               .I(5, "10")
                               .I(13, "1382")
                               .C(1, "68fd1e64")
                               .C(26, "9727dd16")
                               .str();
  LabeledExample example = MustParse(InputFormat::kCriteo, line);
  EXPECT_EQ(example.label, 1.0f);
  EXPECT_EQ(example.importance, 1.0f);
  std::vector<std::string> names;
  std::vector<std::string> features;
  for (const Namespace& ns : example.example.namespaces) {
    ASSERT_EQ(ns.features.size(), 1u) << ns.name;
    EXPECT_THAT(ns.features[0], FieldsAre(::testing::_, 0u, false, 1.0f, false));
    names.push_back(ns.name);
    features.push_back(ns.features[0].name);
  }
  // Empty cells are missing: their namespaces are left out.
  EXPECT_THAT(names, ElementsAre("I1", "I2", "I3", "I4", "I5", "I13", "C1", "C26"));
  // ln(3)^2 = 1.21, ln(10)^2 = 5.30, ln(1382)^2 = 52.3.
  EXPECT_THAT(features, ElementsAre("-1", "0", "2", "L1", "L5", "L52", "68fd1e64", "9727dd16"));
}

TEST(ParseCriteoTest, AllCellsEmptyGivesNoNamespaces) {
  LabeledExample example = MustParse(InputFormat::kCriteo, CriteoLine().str());
  EXPECT_EQ(example.label, 0.0f);
  EXPECT_TRUE(example.example.namespaces.empty());
}

TEST(ParseCriteoTest, ReportsErrors) {
  const InputFormat f = InputFormat::kCriteo;
  const std::string good = CriteoLine().str();
  EXPECT_EQ(ErrorOf(f, good.substr(0, good.size() - 1)),
            "expected 40 tab-separated fields, got 39");
  EXPECT_EQ(ErrorOf(f, good + "\t"), "expected 40 tab-separated fields, got 41");
  EXPECT_EQ(ErrorOf(f, "0 1 2"), "expected 40 tab-separated fields, got 1");
  EXPECT_EQ(ErrorOf(f, CriteoLine().I(5, "abc").str()), "I5 is \"abc\": not an integer");
  EXPECT_EQ(ErrorOf(f, CriteoLine().I(1, "1.5").str()), "I1 is \"1.5\": not an integer");
  EXPECT_EQ(ErrorOf(f, CriteoLine().I(13, "99999999999999999999").str()),
            "I13 is \"99999999999999999999\": not an integer");
  EXPECT_EQ(ErrorOf(f, CriteoLine().Label("x").str()), "label \"x\" is not a number");
  EXPECT_EQ(ErrorOf(f, CriteoLine().Label("").str()), "label \"\" is not a number");
}

// ---------------------------------------------------------------------------
// Reuse of the output

TEST(ParseLineTest, ReusedExampleKeepsNothingFromThePreviousLine) {
  LabeledExample example;
  ASSERT_TRUE(ParseLine(InputFormat::kVw, "1 3 |a x y z |b w |c v", &example).ok());
  ASSERT_TRUE(ParseLine(InputFormat::kVw, "0 |a p", &example).ok());
  EXPECT_EQ(example.label, 0.0f);
  EXPECT_EQ(example.importance, 1.0f);
  ASSERT_EQ(example.example.namespaces.size(), 1u);
  EXPECT_THAT(example.example.namespaces[0].features, ElementsAre(Named("p", 1.0f)));

  ASSERT_TRUE(ParseLine(InputFormat::kLibsvm, "1 4:2 5:3", &example).ok());
  ASSERT_EQ(example.example.namespaces.size(), 1u);
  EXPECT_EQ(example.example.namespaces[0].name, "");
  EXPECT_THAT(example.example.namespaces[0].features, ElementsAre(Id(4, 2.0f), Id(5, 3.0f)));

  ASSERT_TRUE(ParseLine(InputFormat::kVw, "1 |n a:2", &example).ok());
  EXPECT_THAT(example.example.namespaces[0].features, ElementsAre(Named("a", 2.0f)));
}

}  // namespace
}  // namespace clickd
