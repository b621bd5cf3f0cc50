#include "client/clickctl/server_replay.h"

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(ToProto, KeepsNamesIdsValuesLabelAndImportance) {
  LabeledExample e;
  e.label = 1;
  e.importance = 2.5f;
  e.example.namespaces.push_back({"u", {Feature::Named("a"), Feature::WithId(7, 0.5f)}});
  v1::LabeledExample p;
  ToProto(e, &p);
  EXPECT_EQ(p.label(), 1.0f);
  EXPECT_EQ(p.importance(), 2.5f);
  ASSERT_EQ(p.example().namespaces_size(), 1);
  const v1::Namespace& ns = p.example().namespaces(0);
  EXPECT_EQ(ns.name(), "u");
  EXPECT_EQ(ns.features(0).name(), "a");
  EXPECT_FALSE(ns.features(0).has_value());
  EXPECT_EQ(ns.features(1).id(), 7u);
  EXPECT_EQ(ns.features(1).value(), 0.5f);
  e.importance = 1;
  p.Clear();
  ToProto(e, &p);
  EXPECT_FALSE(p.has_importance());
}

}  // namespace
}  // namespace clickd
