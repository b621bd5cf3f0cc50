#include "wire/example_proto.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/persist/batch_codec.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

v1::Example ProtoExample() {
  v1::Example e;
  auto* ns = e.add_namespaces();
  ns->set_name("user");
  ns->add_features()->set_name("country=FR");
  auto* f = ns->add_features();
  f->set_id(42);
  f->set_value(0.5f);
  return e;
}

TEST(Convert, ExampleFieldsAndDefaultValue) {
  auto e = ToExample(ProtoExample(), "context", ExampleLimits{});
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->namespaces.size(), 1u);
  const auto& fs = e->namespaces[0].features;
  EXPECT_EQ(fs[0].name, "country=FR");
  EXPECT_EQ(fs[0].value, 1.0f);  // unset value means 1
  EXPECT_TRUE(fs[1].has_id);
  EXPECT_EQ(fs[1].id, 42u);
  EXPECT_EQ(fs[1].value, 0.5f);
}

TEST(Convert, ErrorsNameThePath) {
  v1::Example e = ProtoExample();
  e.mutable_namespaces(0)->mutable_features(1)->set_value(std::nanf(""));
  auto s = ToExample(e, "candidates[3]", ExampleLimits{}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "candidates[3].namespaces[0].features[1].value is nan; must be finite");
  e.mutable_namespaces(0)->mutable_features(1)->set_value(1e20f);
  s = ToExample(e, "candidates[3]", ExampleLimits{}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "candidates[3].namespaces[0].features[1].value is 1e+20; the limit is 1e+06 in "
            "absolute value");
  e.mutable_namespaces(0)->mutable_features(1)->set_value(-1e6f);  // at the limit
  EXPECT_TRUE(ToExample(e, "candidates[3]", ExampleLimits{}).ok());
  e = ProtoExample();
  e.mutable_namespaces(0)->add_features();  // neither name nor id
  s = ToExample(e, "context", ExampleLimits{}).status();
  EXPECT_EQ(s.message(), "context.namespaces[0].features[2] has neither name nor id");
  ExampleLimits small;
  small.max_features_per_example = 1;
  s = ToExample(ProtoExample(), "context", small).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "context has 2 features; the limit is 1");
}

// Every error of ToExample, pinned byte for byte.
TEST(Convert, EveryExampleErrorNamesItsField) {
  ExampleLimits small;
  small.max_name_bytes = 4;
  small.max_namespaces_per_example = 1;
  auto message = [&](const v1::Example& e) {
    return std::string(ToExample(e, "examples[2].example", small).status().message());
  };
  v1::Example e = ProtoExample();
  EXPECT_EQ(message(e),
            "examples[2].example.namespaces[0].features[0].name has 10 bytes; must be 1..4");
  e.mutable_namespaces(0)->mutable_features(0)->set_name("");
  EXPECT_EQ(message(e),
            "examples[2].example.namespaces[0].features[0].name has 0 bytes; must be 1..4");
  e.mutable_namespaces(0)->set_name("users");
  EXPECT_EQ(message(e), "examples[2].example.namespaces[0].name has 5 bytes; the limit is 4");
  e.add_namespaces();
  auto s = ToExample(e, "examples[2].example", small).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "examples[2].example.namespaces has 2 entries; the limit is 1");

  e.Clear();
  auto* dense = e.add_dense();
  dense->set_namespace_("image");
  dense->add_values(1);
  s = ToExample(e, "context", small).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "context.dense[0].namespace has 5 bytes; the limit is 4");
  dense->set_namespace_("img");
  for (int i = 0; i < 65536; ++i) dense->add_values(0);
  s = ToExample(e, "context", small).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "context has 65537 dense values; the limit is 65536");
}

// A valid example formats no path; an error formats it once.
TEST(Convert, PathIsFormattedOnlyForAnError) {
  int formatted = 0;
  auto path = [&] {
    ++formatted;
    return std::string("candidates[3]");
  };
  EXPECT_TRUE(ToExample(ProtoExample(), path, ExampleLimits{}).ok());
  EXPECT_EQ(formatted, 0);
  v1::Example e = ProtoExample();
  e.mutable_namespaces(0)->mutable_features(1)->set_value(std::nanf(""));
  EXPECT_EQ(ToExample(e, path, ExampleLimits{}).status().message(),
            "candidates[3].namespaces[0].features[1].value is nan; must be finite");
  EXPECT_EQ(formatted, 1);
}

// A namespace "user" with two packed names (values 1 and 0.5), two packed
// ids (every value 1) and one packed key (value 2).
v1::Example PackedExample() {
  v1::Example e;
  v1::Namespace* ns = e.add_namespaces();
  ns->set_name("user");
  ns->add_names("a");
  ns->add_names("b");
  ns->add_values(1);
  ns->add_values(0.5f);
  ns->add_ids(7);
  ns->add_ids(8);
  ns->add_keys(0xfeedu);
  ns->add_key_values(2);
  return e;
}

TEST(Convert, PackedFormsFollowTheFeatureMessages) {
  v1::Example e = PackedExample();
  e.mutable_namespaces(0)->add_features()->set_name("first");
  auto got = ToExample(e, "context", ExampleLimits{});
  ASSERT_TRUE(got.ok()) << got.status();
  const std::vector<Feature>& fs = got->namespaces[0].features;
  ASSERT_EQ(fs.size(), 6u);
  EXPECT_EQ(fs[0].name, "first");
  EXPECT_EQ(fs[1].name, "a");
  EXPECT_EQ(fs[1].value, 1.0f);
  EXPECT_EQ(fs[2].name, "b");
  EXPECT_EQ(fs[2].value, 0.5f);
  EXPECT_TRUE(fs[3].has_id && !fs[3].is_key);
  EXPECT_EQ(fs[3].id, 7u);
  EXPECT_EQ(fs[3].value, 1.0f);  // empty id_values: every value 1
  EXPECT_EQ(fs[4].id, 8u);
  EXPECT_TRUE(fs[5].has_id && fs[5].is_key);
  EXPECT_EQ(fs[5].id, 0xfeedu);
  EXPECT_EQ(fs[5].value, 2.0f);
}

// Every error of the packed forms, pinned byte for byte.
TEST(Convert, EveryPackedErrorNamesItsField) {
  ExampleLimits small;
  small.max_name_bytes = 4;
  auto error = [&](const v1::Example& e) { return ToExample(e, "candidates[3]", small).status(); };
  struct Case {
    std::string what;
    void (*mutate)(v1::Namespace*);
    absl::StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"more values than names", [](v1::Namespace* ns) { ns->add_values(1); },
       absl::StatusCode::kInvalidArgument,
       "candidates[3].namespaces[0].values: 3 values for 2 names"},
      {"values without names",
       [](v1::Namespace* ns) {
         ns->clear_names();
         ns->clear_values();
         ns->add_values(1);
       },
       absl::StatusCode::kInvalidArgument,
       "candidates[3].namespaces[0].values: 1 values for 0 names"},
      {"fewer id values than ids", [](v1::Namespace* ns) { ns->add_id_values(1); },
       absl::StatusCode::kInvalidArgument,
       "candidates[3].namespaces[0].id_values: 1 values for 2 ids"},
      {"more key values than keys", [](v1::Namespace* ns) { ns->add_key_values(1); },
       absl::StatusCode::kInvalidArgument,
       "candidates[3].namespaces[0].key_values: 2 values for 1 keys"},
      {"empty name", [](v1::Namespace* ns) { ns->set_names(1, ""); },
       absl::StatusCode::kInvalidArgument,
       "candidates[3].namespaces[0].names[1] has 0 bytes; must be 1..4"},
      {"long name", [](v1::Namespace* ns) { ns->set_names(0, "abcde"); },
       absl::StatusCode::kInvalidArgument,
       "candidates[3].namespaces[0].names[0] has 5 bytes; must be 1..4"},
      {"nan value", [](v1::Namespace* ns) { ns->set_values(1, std::nanf("")); },
       absl::StatusCode::kInvalidArgument,
       "candidates[3].namespaces[0].values[1] is nan; must be finite"},
      {"infinite id value",
       [](v1::Namespace* ns) {
         ns->add_id_values(1);
         ns->add_id_values(-INFINITY);
       },
       absl::StatusCode::kInvalidArgument,
       "candidates[3].namespaces[0].id_values[1] is -inf; must be finite"},
      {"key value beyond the limit", [](v1::Namespace* ns) { ns->set_key_values(0, 2e6f); },
       absl::StatusCode::kInvalidArgument,
       "candidates[3].namespaces[0].key_values[0] is 2e+06; the limit is 1e+06 in absolute "
       "value"},
  };
  for (const Case& c : cases) {
    v1::Example e = PackedExample();
    c.mutate(e.mutable_namespaces(0));
    const absl::Status s = error(e);
    EXPECT_EQ(s.code(), c.code) << c.what;
    EXPECT_EQ(s.message(), c.message) << c.what;
  }
}

// max_features_per_example counts every form, and a value list longer than
// its keys by its length: refused before any entry is read.
TEST(Convert, LimitsCountEveryForm) {
  ExampleLimits limits;
  limits.max_features_per_example = 5;
  EXPECT_TRUE(ToExample(PackedExample(), "context", limits).ok());
  v1::Example e = PackedExample();
  e.mutable_namespaces(0)->add_features()->set_id(1);
  absl::Status s = ToExample(e, "context", limits).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "context has 6 features; the limit is 5");
  e = PackedExample();
  for (int i = 0; i < 1'000'000; ++i) e.mutable_namespaces(0)->add_values(std::nanf(""));
  s = ToExample(e, "context", ExampleLimits{}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "context has 1000005 features; the limit is 4096");
}

TEST(Convert, FeatureCountsOfEveryForm) {
  v1::Namespace ns = PackedExample().namespaces(0);
  EXPECT_EQ(FeatureEntries(ns), 5u);
  EXPECT_EQ(NonzeroFeatures(ns), 5u);
  ns.set_values(0, 0);  // 0 drops a feature
  ns.add_features()->set_value(0);
  ns.add_features();     // unset value: 1
  ns.add_key_values(3);  // one value more than keys: counted
  EXPECT_EQ(FeatureEntries(ns), 8u);
  EXPECT_EQ(NonzeroFeatures(ns), 6u);
  EXPECT_EQ(FeatureEntries(v1::Namespace()), 0u);  // an empty namespace is valid
  v1::Example empty;
  empty.add_namespaces()->set_name("u");
  auto got = ToExample(empty, "context", ExampleLimits{});
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->namespaces[0].features.empty());
}

// What the update log records of a converted example keeps each form: a
// key stays a key (kind 2) through EncodeBatch and DecodeBatch, so that a
// replay at restart hashes it as the Update did.
TEST(Convert, EveryFormSurvivesTheUpdateLog) {
  v1::Example e = PackedExample();
  e.mutable_namespaces(0)->add_features()->set_name("first");
  const Example example = *ToExample(e, "context", ExampleLimits{});
  const TrainingExample entry{nullptr, &example, 1.0f, 1.0f};
  std::string bytes;
  EncodeBatch({&entry, 1}, &bytes);
  auto decoded = DecodeBatch(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->batch.size(), 1u);
  const std::vector<Feature>& want = example.namespaces[0].features;
  const std::vector<Feature>& got = decoded->batch[0].example->namespaces[0].features;
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name) << i;
    EXPECT_EQ(got[i].id, want[i].id) << i;
    EXPECT_EQ(got[i].has_id, want[i].has_id) << i;
    EXPECT_EQ(got[i].is_key, want[i].is_key) << i;
    EXPECT_EQ(got[i].value, want[i].value) << i;
  }
  EXPECT_TRUE(got[5].is_key);
}

}  // namespace
}  // namespace clickd
