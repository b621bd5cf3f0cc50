#include "server/update_request.h"

#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace clickd {
namespace {

std::unique_ptr<Model> NewModel(std::vector<DenseNamespace> dense = {}) {
  ModelConfig config;
  config.name = "m";
  config.dense_namespaces = std::move(dense);
  config.dense_optimizer.tau = 1;  // within the small dimensions below
  auto model = CreateModel(config);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

void AddFeature(v1::Example* e, const std::string& ns, const std::string& name) {
  auto* n = e->add_namespaces();
  n->set_name(ns);
  n->add_features()->set_name(name);
}

// One plain example, then an impression with a context and two candidates.
v1::UpdateRequest Request() {
  v1::UpdateRequest r;
  r.set_model("m");
  auto* plain = r.add_examples();
  AddFeature(plain->mutable_example(), "ad", "a1");
  plain->set_label(1);
  plain->set_importance(2);
  auto* imp = r.add_impressions();
  AddFeature(imp->mutable_context(), "user", "fr");
  for (const char* ad : {"a2", "a3"}) {
    auto* c = imp->add_candidates();
    AddFeature(c->mutable_example(), "ad", ad);
    c->set_label(0);
  }
  return r;
}

TEST(ValidateUpdateRequest, BatchIsInRequestOrderAndSurvivesAMove) {
  auto model = NewModel();
  auto update = ValidateUpdateRequest(*model, Request(), Limits{});
  ASSERT_TRUE(update.ok()) << update.status();
  ValidatedUpdate moved = *std::move(update);
  ASSERT_EQ(moved.batch.size(), 3u);
  EXPECT_EQ(moved.batch[0].context, nullptr);
  EXPECT_EQ(moved.batch[0].example, &moved.examples[0]);
  EXPECT_EQ(moved.batch[0].label, 1.0f);
  EXPECT_EQ(moved.batch[0].importance, 2.0f);
  for (size_t i : {1u, 2u}) {
    EXPECT_EQ(moved.batch[i].context, &moved.contexts[0]);
    EXPECT_EQ(moved.batch[i].example, &moved.examples[i]);
    EXPECT_EQ(moved.batch[i].label, 0.0f);
    EXPECT_EQ(moved.batch[i].importance, 1.0f);  // unset means 1
  }
  EXPECT_EQ(moved.examples[2].namespaces[0].features[0].name, "a3");
  EXPECT_EQ(moved.contexts[0].namespaces[0].features[0].name, "fr");
}

// A request wrong at every step gets the first step's error; fixing each
// in turn shows the next: limits, shapes, labels, dense values.
TEST(ValidateUpdateRequest, ChecksInOrderFirstErrorWins) {
  auto model = NewModel();
  v1::UpdateRequest r = Request();
  v1::Example* candidate = r.mutable_impressions(0)->mutable_candidates(1)->mutable_example();
  candidate->mutable_namespaces(0)->mutable_features(0)->set_value(std::nanf(""));
  r.mutable_impressions(0)->mutable_candidates(0)->set_label(2);
  r.mutable_examples(0)->mutable_example()->add_dense()->set_namespace_("img");
  Limits limits;
  limits.max_features_after_interactions = 1;  // each example yields 2 (with the bias)

  auto message = [&] {
    return std::string(ValidateUpdateRequest(*model, r, limits).status().message());
  };
  EXPECT_EQ(message(),
            "examples[0].example yields 2 features after interactions; the limit is 1 "
            "(max_features_after_interactions)");
  limits = Limits{};
  EXPECT_EQ(message(),
            "impressions[0].candidates[1].example.namespaces[0].features[0].value is nan; must "
            "be finite");
  candidate->mutable_namespaces(0)->mutable_features(0)->clear_value();
  EXPECT_EQ(message(),
            "impressions[0].candidates[0].label is 2; logistic loss takes labels 0/1 or -1/+1");
  r.mutable_impressions(0)->mutable_candidates(0)->set_label(1);
  EXPECT_EQ(message(),
            "examples[0].example.dense has 1 entries; model \"m\" declares no dense namespaces");
  r.mutable_examples(0)->mutable_example()->clear_dense();
  EXPECT_TRUE(ValidateUpdateRequest(*model, r, limits).ok());
}

TEST(ValidateUpdateRequest, RefusesEmptyRequestsAndBadKeys) {
  auto model = NewModel();
  v1::UpdateRequest r;
  EXPECT_EQ(ValidateUpdateRequest(*model, r, Limits{}).status().message(),
            "examples and impressions are both empty");
  r = Request();
  r.set_idempotency_key("a\nb");
  EXPECT_EQ(
      ValidateUpdateRequest(*model, r, Limits{}).status().message(),
      "idempotency_key has byte 10 at offset 1; it may hold only printable ASCII (0x21-0x7e)");
  Limits limits;
  limits.max_examples_per_update = 2;
  r.clear_idempotency_key();
  auto status = ValidateUpdateRequest(*model, r, limits).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(), "the update has 3 examples; the limit is 2");
}

// Core's checks run unnamed first, then named for an error: the names
// are those of the failing entry.
TEST(ValidateUpdateRequest, CoreCheckErrorsNameTheEntry) {
  auto model = NewModel({{"img", 2}});
  v1::UpdateRequest r = Request();
  r.mutable_examples(0)->set_importance(-1);
  EXPECT_EQ(ValidateUpdateRequest(*model, r, Limits{}).status().message(),
            "examples[0].importance is -1; must be finite and >= 0");
  r.mutable_examples(0)->clear_importance();
  auto* dense = r.mutable_impressions(0)->mutable_candidates(1)->mutable_example()->add_dense();
  dense->set_namespace_("img");
  dense->add_values(1);
  dense->add_values(std::nanf(""));
  EXPECT_EQ(ValidateUpdateRequest(*model, r, Limits{}).status().message(),
            "impressions[0].candidates[1].example.dense[0].values[1] is nan; must be finite");
  auto* context_dense = r.mutable_impressions(0)->mutable_context()->add_dense();
  context_dense->set_namespace_("img");
  context_dense->add_values(1);
  EXPECT_EQ(ValidateUpdateRequest(*model, r, Limits{}).status().message(),
            "impressions[0].context.dense[0].values has 1 entries; dense namespace \"img\" has "
            "dimension 2");
  context_dense->add_values(2);
  dense->set_values(1, 3);
  EXPECT_EQ(ValidateUpdateRequest(*model, r, Limits{}).status().message(),
            "impressions[0].candidates[1].example.dense[0].namespace \"img\" is given twice");
  r.mutable_impressions(0)->mutable_context()->clear_dense();
  EXPECT_TRUE(ValidateUpdateRequest(*model, r, Limits{}).ok());
}

}  // namespace
}  // namespace clickd
