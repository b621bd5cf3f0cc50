#include "wire/predict_request.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace clickd {
namespace {

// Hands each checked namespace and feature to the hasher's collector.
class CollectorSink final : public ExampleSink {
 public:
  explicit CollectorSink(FeatureHasher::Collector* collector) : collector_(collector) {}

  void StartNamespace(const v1::Namespace& ns) override { collector_->StartNamespace(ns.name()); }

  void AddNamed(const std::string& name, float value) override {
    collector_->AddNamed(name, value);
  }
  void AddId(uint64_t id, float value) override { collector_->AddId(id, value); }
  void AddKey(uint64_t key, float value) override { collector_->AddKey(key, value); }
  void AddUnitKeys(absl::Span<const uint64_t> keys) override { collector_->AddUnitKeys(keys); }

 private:
  FeatureHasher::Collector* const collector_;
};

// ToExample's checks of one example (CheckExample), its features hashed as
// they pass and its dense values, if any, copied into *dense. `candidate`
// is -1 for the context.
absl::Status AddExample(const v1::Example& proto, int candidate, const ExampleLimits& limits,
                        FeatureHasher::Collector* collector, Example* dense) {
  CollectorSink sink(collector);
  return CheckExample(
      proto,
      [candidate] {
        return candidate < 0 ? std::string("context") : absl::StrCat("candidates[", candidate, "]");
      },
      limits, &sink, dense);
}

uint64_t DenseValueCount(const Example& example) {
  uint64_t n = 0;
  for (const DenseValues& d : example.dense) n += d.values.size();
  return n;
}

bool HasDense(const v1::PredictRequest& request) {
  if (request.context().dense_size() > 0) return true;
  for (const v1::Example& c : request.candidates()) {
    if (c.dense_size() > 0) return true;
  }
  return false;
}

}  // namespace

absl::Status HashPredictRequest(const v1::PredictRequest& request, const Model& model,
                                const ExampleLimits& limits, HashedCandidates* out,
                                HashingProgress* progress) {
  out->Clear();
  const FeatureHasher& hasher = model.hasher();
  const int n = request.candidates_size();
  if (HasDense(request)) out->dense.resize(n + 1);
  Example no_dense;  // where dense values go when the request has none
  auto dense_of = [&](int k) { return out->dense.empty() ? &no_dense : &out->dense[k]; };
  {
    FeatureHasher::Collector collector(hasher, &out->context.features, &out->context.terms);
    absl::Status s = AddExample(request.context(), -1, limits, &collector, dense_of(0));
    if (!s.ok()) return s;
    if (progress != nullptr) {
      s = progress->Context(out->context.features.size(), DenseValueCount(*dense_of(0)));
      if (!s.ok()) return s;
    }
  }
  hasher.FinishContext(&out->context);
  thread_local FeatureHasher::TermLists terms;
  out->ends.reserve(n);
  // One collector for every candidate: they usually share their
  // namespaces, whose hashes it then computes once.
  FeatureHasher::Collector collector(hasher, &out->features, &terms);
  for (int i = 0; i < n; ++i) {
    const size_t first = out->features.size();
    if (i > 0) collector.NextExample();
    absl::Status s = AddExample(request.candidates(i), i, limits, &collector, dense_of(1 + i));
    if (!s.ok()) return s;
    if (progress != nullptr) {
      s = progress->Candidate(i, out->features.size() - first, DenseValueCount(*dense_of(1 + i)));
      if (!s.ok()) return s;
    }
    hasher.FinishCandidate(out->context, terms, &out->features, first);
    out->ends.push_back(out->features.size());
  }
  if (out->dense.empty()) return absl::OkStatus();  // CheckDenseValues passes every candidate
  for (int i = 0; i < n; ++i) {
    absl::Status s = CheckDenseValues(model, &out->dense[0], "context", out->dense[1 + i],
                                      absl::StrCat("candidates[", i, "]"));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace clickd
