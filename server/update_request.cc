#include "server/update_request.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/features/feature_count.h"
#include "core/model/model_config.h"
#include "server/request_cost.h"
#include "wire/example_proto.h"

namespace clickd {

// Checks the key: it becomes a NATS message id, a header value, so a CR or
// LF would forge headers; only printable ASCII is accepted.
absl::Status CheckIdempotencyKey(const std::string& key, const Limits& limits) {
  if (key.size() > limits.max_idempotency_key_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("idempotency_key has ", key.size(),
                                                   " bytes; the limit is ",
                                                   limits.max_idempotency_key_bytes));
  }
  for (size_t i = 0; i < key.size(); ++i) {
    const unsigned char c = key[i];
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(
          absl::StrCat("idempotency_key has byte ", static_cast<int>(c), " at offset ", i,
                       "; it may hold only printable ASCII (0x21-0x7e)"));
    }
  }
  return absl::OkStatus();
}

namespace {

// Step 1: counts the examples (plain ones and impressions' candidates) and
// checks the count, the idempotency key and the cost (`cost`, counted by
// the caller) against the limits, before anything is converted.
absl::StatusOr<size_t> CheckUpdateLimits(const v1::UpdateRequest& request, const RequestCost& cost,
                                         const Limits& limits) {
  size_t total = request.examples_size();
  for (const v1::Impression& imp : request.impressions()) total += imp.candidates_size();
  if (total == 0) return absl::InvalidArgumentError("examples and impressions are both empty");
  if (absl::Status s = CheckIdempotencyKey(request.idempotency_key(), limits); !s.ok()) return s;
  if (total > limits.max_examples_per_update) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the update has ", total, " examples; the limit is ", limits.max_examples_per_update));
  }
  if (!cost.status.ok()) return cost.status;
  return total;
}

// Step 1b: each variant learns every example in a store of its own, so a
// model with variants does (and may grow its tables by) 1 + variants times
// the request's features (`features`, within the limit by step 1): counted
// against the same per-request limit.
absl::Status CheckVariantsCost(const ModelConfig& config, uint64_t features, const Limits& limits) {
  if (config.variants.empty()) return absl::OkStatus();
  const uint64_t stores = 1 + config.variants.size();
  const uint64_t cap = limits.max_features_per_request / stores;
  if (features <= cap) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the request's examples yield more than ", cap,
      " features after interactions; each of the model's ", stores, " stores (the primary and ",
      config.variants.size(), " variants) learns them all, and the limit, ",
      limits.max_features_per_request, " (max_features_per_request), counts each store's"));
}

// Step 1c: a model with factors makes a factor row (a key, then factors
// and their AdaGrad sums: 8 + 8 x row floats bytes) for each new feature
// of its fields, up to 8 KiB a feature (16 fields x dim 64), where a linear
// coordinate costs about 25 bytes. The request's field features (a
// context's once per impression) bound the rows it can add, in bytes,
// against Limits::max_factor_bytes_per_update.
absl::Status CheckFactorRows(const ModelConfig& config, const v1::UpdateRequest& request,
                             const Limits& limits) {
  // The model's and its variants' rows: each factorized member makes one
  // per new field feature.
  const uint64_t row_bytes = FactorRowBytesPerFeature(config);
  if (row_bytes == 0) return absl::OkStatus();
  const std::vector<std::string>& fields = FactorizationFields(config);
  const auto field_features = [&](const v1::Example& example) {
    uint64_t n = 0;
    for (const v1::Namespace& ns : example.namespaces()) {
      if (std::find(fields.begin(), fields.end(), ns.name()) != fields.end()) {
        n = SaturatingAdd(n, NonzeroFeatures(ns));
      }
    }
    return n;
  };
  uint64_t features = 0;
  for (const v1::LabeledExample& le : request.examples()) {
    features = SaturatingAdd(features, field_features(le.example()));
  }
  for (const v1::Impression& imp : request.impressions()) {
    features = SaturatingAdd(features, field_features(imp.context()));
    for (const v1::LabeledExample& c : imp.candidates()) {
      features = SaturatingAdd(features, field_features(c.example()));
    }
  }
  const uint64_t limit = limits.max_factor_bytes_per_update;
  if (features <= limit / row_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the update has ", features, " features of factorization.fields, each adding up to ",
      row_bytes, " bytes of factor rows if new; the limit is --max_factor_bytes_per_update ", limit,
      " (", limit / row_bytes, " such features per update)"));
}

float Importance(const v1::LabeledExample& le) {
  return le.has_importance() ? le.importance() : 1.0f;
}

// Step 2: converts every example of `request` (`total` of them) into
// *out, plain examples first, then each impression's candidates with its
// context. The vectors are sized up front, so `batch`'s pointers stay
// valid while it grows.
absl::Status ConvertUpdate(const v1::UpdateRequest& request, size_t total, const Limits& limits,
                           ValidatedUpdate* out) {
  out->examples.resize(total);
  out->contexts.resize(request.impressions_size());
  out->batch.reserve(total);
  size_t next = 0;
  for (int i = 0; i < request.examples_size(); ++i, ++next) {
    const v1::LabeledExample& le = request.examples(i);
    auto e = ToExample(
        le.example(), [&] { return absl::StrCat("examples[", i, "].example"); }, limits);
    if (!e.ok()) return e.status();
    out->examples[next] = *std::move(e);
    out->batch.push_back({nullptr, &out->examples[next], le.label(), Importance(le)});
  }
  for (int m = 0; m < request.impressions_size(); ++m) {
    const v1::Impression& imp = request.impressions(m);
    auto ctx = ToExample(
        imp.context(), [&] { return absl::StrCat("impressions[", m, "].context"); }, limits);
    if (!ctx.ok()) return ctx.status();
    out->contexts[m] = *std::move(ctx);
    for (int c = 0; c < imp.candidates_size(); ++c, ++next) {
      const v1::LabeledExample& le = imp.candidates(c);
      auto e = ToExample(
          le.example(),
          [&] { return absl::StrCat("impressions[", m, "].candidates[", c, "].example"); }, limits);
      if (!e.ok()) return e.status();
      out->examples[next] = *std::move(e);
      out->batch.push_back({&out->contexts[m], &out->examples[next], le.label(), Importance(le)});
    }
  }
  return absl::OkStatus();
}

// The path of each batch entry, in batch order: "examples[i]", then
// "impressions[m].candidates[c]".
std::vector<std::string> EntryFields(const v1::UpdateRequest& request) {
  std::vector<std::string> fields;
  for (int i = 0; i < request.examples_size(); ++i) {
    fields.push_back(absl::StrCat("examples[", i, "]"));
  }
  for (int m = 0; m < request.impressions_size(); ++m) {
    for (int c = 0; c < request.impressions(m).candidates_size(); ++c) {
      fields.push_back(absl::StrCat("impressions[", m, "].candidates[", c, "]"));
    }
  }
  return fields;
}

// Core's checks take the names of what they check already formatted. Each
// is run first without names and, only if it fails, again with them: a
// valid request formats no name, and since the checks are pure, the second
// run fails at the same entry with the same message, now named.

// Step 3: labels and importances for the model's loss.
absl::Status CheckLabels(const Model& model, const v1::UpdateRequest& request,
                         const ValidatedUpdate& update) {
  const LossType loss = model.config().loss;
  if (ValidateTrainingBatch(loss, update.batch, [](size_t) { return std::string(); }).ok()) {
    return absl::OkStatus();
  }
  const std::vector<std::string> fields = EntryFields(request);
  return ValidateTrainingBatch(loss, update.batch, [&](size_t i) { return fields[i]; });
}

// Step 4: every entry's dense values (and its context's) against the
// model's dense block.
absl::Status CheckDense(const Model& model, const v1::UpdateRequest& request,
                        const ValidatedUpdate& update) {
  for (size_t i = 0; i < update.batch.size(); ++i) {
    const TrainingExample& entry = update.batch[i];
    if (CheckDenseValues(model, entry.context, {}, *entry.example, {}).ok()) continue;
    const std::string context_field =
        entry.context == nullptr
            ? std::string()
            : absl::StrCat("impressions[", entry.context - update.contexts.data(), "].context");
    return CheckDenseValues(model, entry.context, context_field, *entry.example,
                            EntryFields(request)[i] + ".example");
  }
  return absl::OkStatus();
}

// A dense learner's step, in multiply-adds at dimension d (docs/dense.md's
// step times; tau at least 1).
uint64_t DenseStepWork(const DenseOptimizerConfig& c, uint64_t d) {
  const uint64_t tau = static_cast<uint64_t>(std::max(1, c.tau));
  switch (c.type) {
    case DenseOptimizerType::kAdaDiag:
    case DenseOptimizerType::kAdaDiagDa:
      return d;
    case DenseOptimizerType::kAdaFull:
    case DenseOptimizerType::kAdaFullDa:
      return d * d * d;
    case DenseOptimizerType::kAdaFd:
    case DenseOptimizerType::kAdaFdDa:
    case DenseOptimizerType::kFdSon:
      return tau * tau * d;
    case DenseOptimizerType::kOns:
      return d * d;
    case DenseOptimizerType::kMetaGrad:
      return 16 * d * d;
  }
  return d * d * d;
}

// Step 5: the dense learner's work, before any is done. Only entries with
// dense values (their own or their context's) step it.
absl::Status CheckDenseWork(const Model& model, const ValidatedUpdate& update,
                            const Limits& limits) {
  const ModelConfig& config = model.config();
  if (config.dense_namespaces.empty()) return absl::OkStatus();
  uint64_t d = 0;
  for (const DenseNamespace& ns : config.dense_namespaces) d += static_cast<uint64_t>(ns.dim);
  uint64_t stepping = 0;
  for (const TrainingExample& entry : update.batch) {
    stepping += !entry.example->dense.empty() ||
                (entry.context != nullptr && !entry.context->dense.empty());
  }
  const uint64_t step = DenseStepWork(config.dense_optimizer, d);
  const uint64_t limit = limits.max_dense_work_per_update;
  if (stepping == 0 || stepping <= limit / step) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the update has ", stepping, " examples with dense values, each a step of ",
      std::string(DenseOptimizerTypeName(config.dense_optimizer.type)), " at dimension ", d, " (",
      step, " multiply-adds); the limit is --max_dense_work_per_update ", limit, " (", limit / step,
      " such examples per update)"));
}

}  // namespace

absl::StatusOr<ValidatedUpdate> ValidateUpdateRequest(const Model& model,
                                                      const v1::UpdateRequest& request,
                                                      const Limits& limits,
                                                      const RequestCost* counted) {
  const RequestCost cost =
      counted != nullptr ? *counted : CountUpdateCost(model.config().hashing, request, limits);
  absl::StatusOr<size_t> total = CheckUpdateLimits(request, cost, limits);
  if (!total.ok()) return total.status();
  if (absl::Status s = CheckVariantsCost(model.config(), cost.features, limits); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckFactorRows(model.config(), request, limits); !s.ok()) return s;
  ValidatedUpdate update;
  if (absl::Status s = ConvertUpdate(request, *total, limits, &update); !s.ok()) return s;
  if (absl::Status s = CheckLabels(model, request, update); !s.ok()) return s;
  if (absl::Status s = CheckDense(model, request, update); !s.ok()) return s;
  if (absl::Status s = CheckDenseWork(model, update, limits); !s.ok()) return s;
  return update;
}

}  // namespace clickd
