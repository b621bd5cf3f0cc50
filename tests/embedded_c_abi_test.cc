// The embedded replica's C ABI (embedded/clickd_embedded.h) against a real
// replicated deployment: clickd_embedded_predict_keys, the protobuf-free
// entry point, answers what clickd_embedded_predict answers for the same
// request, bit for bit, and refuses bad arrays naming them with
// INVALID_ARGUMENT, writing nothing.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/clickd_client.h"
#include "core/features/hasher.h"
#include "embedded/clickd_embedded.h"
#include "gtest/gtest.h"
#include "tests/replicated_cluster.h"

namespace clickd {
namespace {

using Clock = std::chrono::steady_clock;

std::string TakeError(char* error) {
  std::string out = error != nullptr ? error : "";
  clickd_embedded_free(error);
  return out;
}

TEST(EmbeddedCAbi, PredictKeysAnswersAsTheMessageDoes) {
  testing::ReplicatedCluster cluster("embedded_c_abi");
  ASSERT_TRUE(cluster.ok());
  ASSERT_TRUE(cluster.StartReplica(0));
  auto client = ClickdClient::Create(cluster.Address(0), {.timeout = absl::Seconds(10)});
  ASSERT_TRUE(client.ok()) << client.status();
  uint64_t version = 0;
  for (int u = 0; u < 20; ++u) {
    v1::UpdateRequest update;
    update.set_model("default");
    update.set_idempotency_key(absl::StrCat("c-abi-", u));
    for (int ad = 0; ad < 10; ++ad) {
      v1::LabeledExample* e = update.add_examples();
      e->set_label((u + ad) % 3 == 0 ? 1.0f : 0.0f);
      v1::Namespace* user = e->mutable_example()->add_namespaces();
      user->set_name("user");
      user->add_features()->set_name(absl::StrCat("u", u));
      v1::Namespace* ads = e->mutable_example()->add_namespaces();
      ads->set_name("ad");
      ads->add_features()->set_name(absl::StrCat("a", ad));
    }
    absl::StatusOr<v1::UpdateResponse> response;
    const auto give_up = Clock::now() + std::chrono::seconds(60);
    do {
      response = (*client)->Update(update);
    } while (!response.ok() && Clock::now() < give_up);
    ASSERT_TRUE(response.ok()) << response.status();
    version = response->model_version();
  }

  clickd_embedded* replica = nullptr;
  char* error = nullptr;
  ASSERT_EQ(clickd_embedded_open(cluster.nats().Urls().c_str(), nullptr, nullptr, 60000, &replica,
                                 &error),
            0)
      << TakeError(error);
  ASSERT_EQ(clickd_embedded_wait_for_version(replica, version, 60000, &error), 0)
      << TakeError(error);

  // The default model's hashing (seed 0): the keys a client hashes itself.
  const FeatureHasher hasher{HashingConfig{}};
  const uint64_t user_ns = hasher.NamespaceHash("user");
  const uint64_t ad_ns = hasher.NamespaceHash("ad");
  v1::PredictRequest request;
  request.set_model("default");
  v1::Namespace* user = request.mutable_context()->add_namespaces();
  user->set_name("user");
  user->add_keys(FeatureHasher::NamedKey(user_ns, "u7"));
  const char* namespaces[] = {"user", "ad"};
  std::vector<uint64_t> context_keys = {FeatureHasher::NamedKey(user_ns, "u7")};
  std::vector<uint32_t> context_ns = {0};
  std::vector<uint64_t> candidate_keys;
  std::vector<uint32_t> candidate_ns;
  std::vector<float> candidate_values;
  std::vector<size_t> ends;
  for (int ad = 0; ad < 10; ++ad) {
    v1::Namespace* space = request.add_candidates()->add_namespaces();
    space->set_name("ad");
    space->add_keys(FeatureHasher::NamedKey(ad_ns, absl::StrCat("a", ad)));
    space->add_key_values(ad % 2 == 0 ? 1.0f : 0.5f);
    candidate_keys.push_back(FeatureHasher::NamedKey(ad_ns, absl::StrCat("a", ad)));
    candidate_ns.push_back(1);
    candidate_values.push_back(ad % 2 == 0 ? 1.0f : 0.5f);
    ends.push_back(candidate_keys.size());
  }
  const std::string bytes = request.SerializeAsString();
  void* out = nullptr;
  size_t out_len = 0;
  ASSERT_EQ(clickd_embedded_predict(replica, bytes.data(), bytes.size(), &out, &out_len, &error), 0)
      << TakeError(error);
  v1::PredictResponse expected;
  ASSERT_TRUE(expected.ParseFromArray(out, static_cast<int>(out_len)));
  clickd_embedded_free(out);
  ASSERT_EQ(expected.predictions_size(), 10);

  std::vector<double> predictions(10, -1), margins(10, -1);
  uint64_t scored_at = 0;
  // Context values NULL: every value 1.
  ASSERT_EQ(clickd_embedded_predict_keys(
                replica, "default", nullptr, namespaces, 2, context_keys.data(), context_ns.data(),
                nullptr, 1, candidate_keys.data(), candidate_ns.data(), candidate_values.data(),
                ends.data(), 10, predictions.data(), margins.data(), &scored_at, &error),
            0)
      << TakeError(error);
  EXPECT_EQ(scored_at, expected.model_version());
  EXPECT_GE(scored_at, version);
  bool some_differ = false;
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(predictions[i], expected.predictions(i).prediction()) << i;
    EXPECT_EQ(margins[i], expected.predictions(i).margin()) << i;
    some_differ |= margins[i] != margins[0];
  }
  EXPECT_TRUE(some_differ);  // the model learned something

  // The same call with its arguments in one struct.
  std::vector<double> from_struct(10, -1);
  clickd_embedded_keys_request keys_request = {"default",
                                               nullptr,
                                               namespaces,
                                               2,
                                               context_keys.data(),
                                               context_ns.data(),
                                               nullptr,
                                               1,
                                               candidate_keys.data(),
                                               candidate_ns.data(),
                                               candidate_values.data(),
                                               ends.data(),
                                               10,
                                               from_struct.data(),
                                               nullptr,
                                               0};
  ASSERT_EQ(clickd_embedded_predict_keys_request(replica, &keys_request, &error), 0)
      << TakeError(error);
  EXPECT_EQ(from_struct, predictions);
  EXPECT_EQ(keys_request.model_version, scored_at);

  // Bad arrays: INVALID_ARGUMENT naming them, nothing written.
  std::vector<uint32_t> bad_ns = {2};
  std::vector<double> untouched(10, -7);
  EXPECT_EQ(clickd_embedded_predict_keys(
                replica, "default", nullptr, namespaces, 2, context_keys.data(), bad_ns.data(),
                nullptr, 1, candidate_keys.data(), candidate_ns.data(), nullptr, ends.data(), 10,
                untouched.data(), nullptr, nullptr, &error),
            3);
  EXPECT_EQ(TakeError(error), "context_namespaces[0] is 2; must be below num_namespaces 2");
  std::vector<size_t> bad_ends = ends;
  bad_ends[4] = 2;
  EXPECT_EQ(clickd_embedded_predict_keys(
                replica, "default", nullptr, namespaces, 2, context_keys.data(), context_ns.data(),
                nullptr, 1, candidate_keys.data(), candidate_ns.data(), nullptr, bad_ends.data(),
                10, untouched.data(), nullptr, nullptr, &error),
            3);
  EXPECT_EQ(TakeError(error), "candidate_ends[4] is 2, below candidate_ends[3] 4");
  EXPECT_EQ(
      clickd_embedded_predict_keys(replica, "default", nullptr, namespaces, 2, nullptr, nullptr,
                                   nullptr, 1, candidate_keys.data(), candidate_ns.data(), nullptr,
                                   ends.data(), 10, untouched.data(), nullptr, nullptr, &error),
      3);
  EXPECT_NE(TakeError(error).find("must be set"), std::string::npos);
  // The good arrays above, unweighted, for `model`, into `out`.
  const auto predict_keys = [&](const char* model, double* out, char** e) {
    return clickd_embedded_predict_keys(replica, model, nullptr, namespaces, 2, context_keys.data(),
                                        context_ns.data(), nullptr, 1, candidate_keys.data(),
                                        candidate_ns.data(), nullptr, ends.data(), 10, out, nullptr,
                                        nullptr, e);
  };
  // A model it does not hold: NOT_FOUND, as the message path says.
  EXPECT_EQ(predict_keys("nope", untouched.data(), &error), 5);
  TakeError(error);
  for (double v : untouched) EXPECT_EQ(v, -7);
  // No candidates: refused as the message path refuses it.
  EXPECT_EQ(
      clickd_embedded_predict_keys(replica, "default", nullptr, namespaces, 2, context_keys.data(),
                                   context_ns.data(), nullptr, 1, nullptr, nullptr, nullptr,
                                   nullptr, 0, nullptr, nullptr, nullptr, &error),
      3);
  EXPECT_EQ(TakeError(error), "candidates is empty; Predict needs at least one");
  // Closed while four threads call: each call answers or fails
  // FAILED_PRECONDITION (closed), nothing else; later calls fail the same
  // way and a second close does nothing (ASan: no use after free).
  std::atomic<int64_t> answered{0};
  std::atomic<int64_t> other_codes{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      std::vector<double> out(10);
      const auto stop_at = Clock::now() + std::chrono::seconds(20);
      while (Clock::now() < stop_at) {
        char* e = nullptr;
        const int code = predict_keys("default", out.data(), &e);
        clickd_embedded_free(e);
        if (code == 9) return;
        if (code == 0) {
          answered.fetch_add(1);
        } else {
          other_codes.fetch_add(1);
        }
      }
    });
  }
  // Bounded: the wait stops at the first unexpected code, or at 20 s.
  const auto close_by = Clock::now() + std::chrono::seconds(20);
  while (answered.load() < 2000 && other_codes.load() == 0 && Clock::now() < close_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  clickd_embedded_close(replica);
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(other_codes.load(), 0);
  EXPECT_EQ(predict_keys("default", untouched.data(), &error), 9);
  EXPECT_EQ(TakeError(error), "the embedded replica is closed");
  EXPECT_EQ(clickd_embedded_applied_version(replica), 0u);
  EXPECT_EQ(clickd_embedded_stats_json(replica), nullptr);
  EXPECT_EQ(clickd_embedded_wait_for_version(replica, 1, 10, &error), 9);
  TakeError(error);
  clickd_embedded_close(replica);  // a second close does nothing
}

}  // namespace
}  // namespace clickd
