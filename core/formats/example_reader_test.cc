#include "core/formats/example_reader.h"

#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/features/hasher.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

std::string WriteTempFile(const std::string& name, const std::string& contents) {
  const std::string path = ::testing::TempDir() + "/example_reader_test_" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  out.close();
  EXPECT_TRUE(out.good()) << path;
  return path;
}

std::unique_ptr<ExampleReader> MustOpen(const std::string& path, InputFormat format,
                                        bool skip_bad_lines = false) {
  absl::StatusOr<std::unique_ptr<ExampleReader>> reader =
      ExampleReader::Open(path, format, skip_bad_lines);
  EXPECT_TRUE(reader.ok()) << reader.status();
  return reader.ok() ? std::move(*reader) : nullptr;
}

// Reads every example; returns the line number of each, or fails the test on
// the first error.
std::vector<uint64_t> ReadAllLineNumbers(ExampleReader& reader) {
  std::vector<uint64_t> lines;
  LabeledExample example;
  while (true) {
    absl::StatusOr<bool> more = reader.Next(&example);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) return lines;
    lines.push_back(reader.line_number());
  }
}

TEST(ExampleReaderTest, OpenMissingFileIsNotFound) {
  const std::string path = ::testing::TempDir() + "/example_reader_test_no_such_file";
  absl::StatusOr<std::unique_ptr<ExampleReader>> reader =
      ExampleReader::Open(path, InputFormat::kLibsvm, false);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(reader.status().message(), "cannot open " + path + ": No such file or directory");
}

TEST(ExampleReaderTest, EmptyFileHasNoExamples) {
  auto reader = MustOpen(WriteTempFile("empty", ""), InputFormat::kVw);
  LabeledExample example;
  EXPECT_EQ(*reader->Next(&example), false);
  EXPECT_EQ(*reader->Next(&example), false);
}

TEST(ExampleReaderTest, HandlesCrlfBlankLinesAndMissingFinalNewline) {
  const std::string path = WriteTempFile("crlf", "1 1:1\r\n\r\n  \t\n0 2:0.5\n\n\r\n1 3:2 4:1");
  auto reader = MustOpen(path, InputFormat::kLibsvm);
  LabeledExample example;
  ASSERT_TRUE(*reader->Next(&example));
  EXPECT_EQ(reader->line_number(), 1u);
  EXPECT_EQ(example.example.namespaces[0].features[0].value, 1.0f);
  ASSERT_TRUE(*reader->Next(&example));
  EXPECT_EQ(reader->line_number(), 4u);
  EXPECT_EQ(example.label, 0.0f);
  EXPECT_EQ(example.example.namespaces[0].features[0].value, 0.5f);
  ASSERT_TRUE(*reader->Next(&example));
  EXPECT_EQ(reader->line_number(), 7u);
  EXPECT_EQ(example.example.namespaces[0].features.size(), 2u);
  EXPECT_FALSE(*reader->Next(&example));
  EXPECT_EQ(reader->skipped_lines(), 0u);
}

TEST(ExampleReaderTest, CrlfDoesNotLeakIntoTheLastCriteoCell) {
  std::string line = "1";
  for (int i = 0; i < 13; ++i) line += "\t1";
  for (int i = 0; i < 26; ++i) line += "\tab";
  auto reader = MustOpen(WriteTempFile("criteo_crlf", line + "\r\n"), InputFormat::kCriteo);
  LabeledExample example;
  ASSERT_TRUE(*reader->Next(&example));
  EXPECT_EQ(example.example.namespaces.back().name, "C26");
  EXPECT_EQ(example.example.namespaces.back().features[0].name, "ab");
}

TEST(ExampleReaderTest, BadLineIsAnErrorWithPathAndLine) {
  const std::string path = WriteTempFile("bad", "1 1:1\n\nx 2:1\n1 3:1\n");
  auto reader = MustOpen(path, InputFormat::kLibsvm);
  LabeledExample example;
  ASSERT_TRUE(*reader->Next(&example));
  absl::StatusOr<bool> bad = reader->Next(&example);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), path + ":3: label \"x\" is not a number");
  EXPECT_EQ(reader->line_number(), 3u);
  // The caller may go on past the error.
  ASSERT_TRUE(*reader->Next(&example));
  EXPECT_EQ(reader->line_number(), 4u);
  EXPECT_EQ(reader->skipped_lines(), 0u);
}

TEST(ExampleReaderTest, SkipBadLinesCountsThemAndKeepsTheFirstErrors) {
  std::string contents = "|f a\n";                                // line 1: missing label
  for (int i = 0; i < 12; ++i) contents += "1 |f a\n1 |f b:x\n";  // bad lines 3, 5, ..., 25
  const std::string path = WriteTempFile("skip", contents);
  auto reader = MustOpen(path, InputFormat::kVw, /*skip_bad_lines=*/true);
  EXPECT_EQ(ReadAllLineNumbers(*reader).size(), 12u);
  EXPECT_EQ(reader->skipped_lines(), 13u);
  ASSERT_EQ(reader->skipped_errors().size(), ExampleReader::kMaxKeptErrors);
  EXPECT_EQ(reader->skipped_errors()[0], path + ":1: missing label");
  EXPECT_EQ(reader->skipped_errors()[1],
            path + ":3: namespace \"f\" feature 1 \"b:x\": value is not a number");
  EXPECT_EQ(reader->skipped_errors()[9].substr(0, path.size() + 4), path + ":19:");
}

// Checks the chunked line splitter against std::getline on lines of random
// lengths, some longer than the reader's buffer, so that lines straddle
// every kind of chunk boundary.
TEST(ExampleReaderTest, MatchesGetlineAcrossBufferBoundaries) {
  std::mt19937 random(7);
  std::string contents;
  for (int line = 0; line < 400; ++line) {
    const int features = line % 97 == 0 ? 60000 : static_cast<int>(random() % 300);
    contents += absl::StrCat(line % 2);
    for (int i = 0; i < features; ++i) absl::StrAppend(&contents, " ", random() % 1000, ":1");
    contents += "\n";
  }
  const std::string path = WriteTempFile("boundaries", contents);

  std::istringstream expected_lines(contents);
  auto reader = MustOpen(path, InputFormat::kLibsvm);
  LabeledExample example;
  std::string expected;
  for (uint64_t line = 1; std::getline(expected_lines, expected); ++line) {
    ASSERT_TRUE(*reader->Next(&example)) << line;
    ASSERT_EQ(reader->line_number(), line);
    const std::vector<Feature>& features = example.example.namespaces[0].features;
    std::string actual = absl::StrCat(example.label);
    for (const Feature& f : features) absl::StrAppend(&actual, " ", f.id, ":", f.value);
    ASSERT_EQ(actual, expected) << "line " << line;
  }
  EXPECT_FALSE(*reader->Next(&example));
}

// ---------------------------------------------------------------------------
// The real sample files.

std::string SharedData(const std::string& relative) {
  return std::string(CLICKD_SHARED_DATA) + "/" + relative;
}

// Returns whether an example was read; an error fails the test and stops.
bool NextOk(ExampleReader& reader, LabeledExample* example) {
  absl::StatusOr<bool> more = reader.Next(example);
  EXPECT_TRUE(more.ok()) << more.status();
  return more.ok() && *more;
}

TEST(ExampleReaderDataTest, ReadsIpinyouLibsvm) {
  auto reader = MustOpen(SharedData("ipinyou/train.fm.txt"), InputFormat::kLibsvm);
  ASSERT_NE(reader, nullptr);
  LabeledExample example;
  int rows = 0;
  int clicks = 0;
  while (NextOk(*reader, &example)) {
    ++rows;
    clicks += example.label == 1.0f;
    ASSERT_EQ(example.example.namespaces.size(), 1u);
    ASSERT_EQ(example.example.namespaces[0].features.size(), 16u) << "row " << rows;
    ASSERT_TRUE(example.example.namespaces[0].features[0].has_id);
  }
  EXPECT_EQ(rows, 26773);
  EXPECT_EQ(clicks, 255);  // the data README's count
  EXPECT_EQ(reader->skipped_lines(), 0u);
}

TEST(ExampleReaderDataTest, ReadsRcv1Vw) {
  auto reader = MustOpen(SharedData("rcv1_small/rcv1_small.dat"), InputFormat::kVw);
  ASSERT_NE(reader, nullptr);
  LabeledExample example;
  int rows = 0;
  int positives = 0;
  while (NextOk(*reader, &example)) {
    ++rows;
    ASSERT_TRUE(example.label == 1.0f || example.label == -1.0f) << example.label;
    positives += example.label > 0;
    ASSERT_EQ(example.example.namespaces.size(), 1u);
    EXPECT_EQ(example.example.namespaces[0].name, "f");
    ASSERT_FALSE(example.example.namespaces[0].features.empty());
  }
  EXPECT_EQ(rows, 1000);
  EXPECT_EQ(positives, 459);
}

TEST(ExampleReaderDataTest, ReadsCriteoTsv) {
  auto reader = MustOpen(SharedData("criteo_8k/train.csv"), InputFormat::kCriteo);
  ASSERT_NE(reader, nullptr);
  LabeledExample example;
  int rows = 0;
  int clicks = 0;
  while (NextOk(*reader, &example)) {
    ++rows;
    ASSERT_TRUE(example.label == 0.0f || example.label == 1.0f) << example.label;
    clicks += example.label == 1.0f;
    ASSERT_LE(example.example.namespaces.size(), 39u);
  }
  EXPECT_EQ(rows, 7200);
  EXPECT_EQ(clicks, 1549);
}

// What NextHashed must equal: Next, then FeatureHasher::Hash.
struct ReadResult {
  std::vector<std::vector<HashedFeature>> features;
  std::vector<std::pair<float, float>> labels;  // label, importance
  std::vector<uint64_t> line_numbers;
  std::string error;  // the status that ended the read, if not OK
  uint64_t skipped = 0;
  std::vector<std::string> skipped_errors;
};

ReadResult ReadAll(const std::string& path, InputFormat format, bool skip,
                   const FeatureHasher& hasher, bool fused) {
  ReadResult r;
  std::unique_ptr<ExampleReader> reader = MustOpen(path, format, skip);
  LabeledExample example;
  HashedLine line;
  while (true) {
    absl::StatusOr<bool> more = fused ? reader->NextHashed(hasher, &line) : reader->Next(&example);
    if (!more.ok()) {
      r.error = more.status().ToString();
      break;
    }
    if (!*more) break;
    std::vector<HashedFeature> features;
    if (fused) {
      features = line.hashed.features;
      r.labels.emplace_back(line.label, line.importance);
    } else {
      hasher.Hash(example.example, &features);
      r.labels.emplace_back(example.label, example.importance);
    }
    r.features.push_back(features);
    r.line_numbers.push_back(reader->line_number());
  }
  r.skipped = reader->skipped_lines();
  r.skipped_errors = reader->skipped_errors();
  return r;
}

void ExpectSameRead(const ReadResult& a, const ReadResult& b) {
  ASSERT_EQ(a.features.size(), b.features.size());
  for (size_t i = 0; i < a.features.size(); ++i) {
    ASSERT_EQ(a.features[i].size(), b.features[i].size()) << "example " << i;
    for (size_t j = 0; j < a.features[i].size(); ++j) {
      EXPECT_EQ(a.features[i][j].key, b.features[i][j].key) << "example " << i << " feature " << j;
      EXPECT_EQ(a.features[i][j].value, b.features[i][j].value) << "example " << i;
    }
  }
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.line_numbers, b.line_numbers);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.skipped, b.skipped);
  EXPECT_EQ(a.skipped_errors, b.skipped_errors);
}

// The fused Vowpal Wabbit path (names hashed in the line) gives exactly
// what parsing into an Example and hashing it gives: keys, values, order,
// labels, importances, lines, and the same errors and skips, under folding,
// crosses (also of a namespace with itself) and without the bias; and the
// other formats through their Example.
TEST(ExampleReaderTest, NextHashedIsNextThenHash) {
  const std::string vw = WriteTempFile("hashed.vw",
                                       "1 |a x y:2 z:0 x |b:0.5 u v:3\n"
                                       "-1 2.5 'tag |a x |b u u u\n"
                                       "\n"
                                       "0 |a\n"
                                       "1 |b:2 w:1e30 |a q\n"
                                       "1 'only_tag |c p:-1.5 |a x\n"
                                       "bad line without a bar\n"
                                       "1 |a x:nan\n"
                                       "1 |a :3\n"
                                       "-1 |a x |b u\r\n"
                                       "1 |a x y |b v\n");
  std::vector<HashingConfig> configs(4);
  configs[1].bits = 18;
  configs[2].interactions = {{"a", "b"}, {"a", "a"}};
  configs[3].bias = false;
  configs[3].seed = 7;
  configs[3].interactions = {{"a", "b", "c"}};
  for (size_t c = 0; c < configs.size(); ++c) {
    SCOPED_TRACE(c);
    const FeatureHasher hasher(configs[c]);
    for (bool skip : {true, false}) {
      SCOPED_TRACE(skip);
      const ReadResult expected = ReadAll(vw, InputFormat::kVw, skip, hasher, false);
      const ReadResult fused = ReadAll(vw, InputFormat::kVw, skip, hasher, true);
      ExpectSameRead(fused, expected);
      if (skip) {
        EXPECT_EQ(expected.skipped, 3u);
        EXPECT_EQ(expected.features.size(), 7u);
      } else {
        EXPECT_NE(expected.error, "");
      }
    }
  }
  const std::string libsvm = WriteTempFile("hashed.libsvm", "1 3:1 7:0.5\n0 2:2\nbad\n");
  const FeatureHasher hasher(HashingConfig{});
  ExpectSameRead(ReadAll(libsvm, InputFormat::kLibsvm, true, hasher, true),
                 ReadAll(libsvm, InputFormat::kLibsvm, true, hasher, false));
}

TEST(ExampleReaderDataTest, NextHashedIsNextThenHashOnRcv1) {
  HashingConfig config;
  config.interactions = {{"f", "f"}};
  const FeatureHasher hasher(config);
  const std::string path = SharedData("rcv1_small/rcv1_small.dat");
  const ReadResult fused = ReadAll(path, InputFormat::kVw, false, hasher, true);
  ExpectSameRead(fused, ReadAll(path, InputFormat::kVw, false, hasher, false));
  EXPECT_EQ(fused.features.size(), 1000u);
}

}  // namespace
}  // namespace clickd
