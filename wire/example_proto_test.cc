#include "wire/example_proto.h"

#include <cmath>

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

}  // namespace
}  // namespace clickd
