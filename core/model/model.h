// Model: a config, a sharded per-coordinate store, an optimizer and a loss.
//
// Thread safety: safe for concurrent access. Any number of threads may call
// Margin, Uncertainty, Weights, Learn and Stats at once. Margin reads each coordinate under its
// shard's reader lock; Learn holds the writer locks of every shard its
// example touches for the whole step (locked in shard order), so a reader
// never sees a half-written coordinate and a step is atomic per shard. The
// round counters have the model's own lock. With one learner at a time,
// learning is deterministic; concurrent learners on disjoint shards proceed
// in parallel, as asynchronous SGD does.
#ifndef CLICKD_CORE_MODEL_MODEL_H_
#define CLICKD_CORE_MODEL_MODEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/features/hasher.h"
#include "core/model/dense_block.h"
#include "core/model/explain.h"
#include "core/model/model_config.h"
#include "core/optim/round.h"

namespace clickd {

struct ModelStats {
  uint64_t updates = 0;                     // examples learned
  uint64_t coordinates = 0;                 // keys in the store
  uint64_t bytes = 0;                       // store table memory
  uint64_t state_bytes_per_coordinate = 0;  // sizeof(key) + sizeof(State); a compact slot: 8
  // Feature admission (config.admission; 0 when every feature is admitted):
  // sightings of features the model did not hold, and how many got in.
  uint64_t admission_sightings = 0;
  uint64_t admission_admitted = 0;
  uint64_t admission_bytes = 0;  // the Bloom filter's counters (kBloom only)
  // Memory budget (config.memory): coordinates evicted since the model was
  // built in this process (a restart's log replay evicts again and counts).
  uint64_t coordinates_evicted = 0;
  // TTL eviction (config.memory.ttl_rounds): coordinates evicted for not
  // being learned within the TTL since the model was built in this process.
  uint64_t coordinates_expired = 0;
};

class Model {
 public:
  virtual ~Model() = default;

  const ModelConfig& config() const { return config_; }
  const FeatureHasher& hasher() const { return hasher_; }

  // Returns w . x for hashed features (keys unique, as FeatureHasher makes
  // them): the sparse part of the margin; the dense block's part is
  // dense_block()->Margin(x).
  virtual double Margin(absl::Span<const HashedFeature> features) const = 0;

  // Sets out[i] = Margin(lists[i]) for every list (out.size() ==
  // lists.size()), bit for bit, reading the model's round counters once for
  // all of them: a Predict scores its context and every candidate at one
  // round, with one read of the round's lock instead of one per candidate.
  virtual void Margins(absl::Span<const absl::Span<const HashedFeature>> lists,
                       absl::Span<double> out) const = 0;

  // Scores candidates against a shared context: lists[0] is the context's
  // features, lists[1..] each candidate's (folded, merged, keys unique in
  // each list). Sets out (out.size() == lists.size()) so that out[0] +
  // out[i] is the sparse margin of the context and candidate i merged, as
  // an update that merges them learns it. A linear margin is additive, so
  // the default is Margins (bit for bit). A model with a factorization
  // adds the pairwise terms: the context's field sums are computed once
  // and each candidate costs O(its features * F * k)
  // (Factorization::CandidateMargin); out[0] is then the context's linear
  // margin only.
  virtual void SharedContextMargins(absl::Span<const absl::Span<const HashedFeature>> lists,
                                    absl::Span<double> out) const {
    Margins(lists, out);
  }
  // Returns the uncertainty score of McMahan et al. 2013, section 5:
  // u(x) = sum_i |x_i| eta_i, with eta_i coordinate i's current rate as its
  // optimizer's LearningRate defines it (FTRL: alpha / (beta + sqrt(n_i)));
  // a coordinate the model does not hold has its optimizer's initial rate.
  // It is the paper's bound on how far one more gradient step (|g_i| <= 1)
  // can move the margin: large for features seen little. Covers the sparse
  // features only: a dense block adds nothing.
  // NaN where the optimizer has no rate (PA, CW, a dense learner; global
  // OGD before its first gradient). Reads at one round, under the shards'
  // reader locks, as Margins does.
  virtual double Uncertainty(absl::Span<const HashedFeature> features) const = 0;

  // Sets out[i] (out.size() == features.size()) to the weight Margin
  // multiplies features[i].value by, 0 for a coordinate not held: summing
  // out[i] * features[i].value in order gives Margin(features) bit for bit
  // (for finite values). Reads at one round, as Margins does.
  virtual void Weights(absl::Span<const HashedFeature> features, absl::Span<double> out) const = 0;

  // A factorization model (ModelConfig::factorization): appends every pair
  // of features' part of Margin's pairwise margin to *out (see
  // Factorization::Pairs), read under the shards' reader locks as Margins
  // reads; the linear part is Weights'. Then Weights' products and these
  // parts add up to Margin (not bit for bit: in another order). Costs
  // O(field features^2 * dim): the caller bounds it. Other models append
  // nothing.
  virtual void FactorPairs(absl::Span<const HashedFeature> features,
                           std::vector<PairContribution>* out) const {}

  // Takes one online step on a labeled example whose label the caller has
  // checked with CheckLabel. With `dense` (the example's assembled dense
  // vector; the model must have a dense block), the margin includes the
  // dense part and the same loss gradient steps the dense block too.
  // Returns the margin predicted *before* the step, which is what
  // progressive validation scores.
  virtual double LearnWithDense(absl::Span<const HashedFeature> features,
                                const Eigen::VectorXd* dense, double label, double importance) = 0;
  double Learn(absl::Span<const HashedFeature> features, double label, double importance) {
    return LearnWithDense(features, nullptr, label, importance);
  }

  // Makes room for every coordinate that learning examples with these
  // features (every example's, one after another) could add, so that the
  // steps allocate no table memory; throws std::bad_alloc, having changed
  // nothing a reader sees, if it cannot. ModelJournal calls it before it
  // logs a batch, so that a batch the memory cannot take is refused and
  // never in the log. The caller holds other learners off. The default
  // does nothing: a dense learner's state does not grow. A model with
  // feature admission reserves nothing (most unseen features are kept out),
  // nor does a budgeted one past its budget (its steps evict first).
  virtual void ReserveFor(absl::Span<const HashedFeature> /*features*/) {}

  // One example of LearnExclusive.
  struct LearnItem {
    absl::Span<const HashedFeature> features;
    double label = 0;
    double importance = 1;
  };
  // Learns `examples` in order exactly as Learn would one by one, setting
  // margins[i] (margins.size() == examples.size()) to example i's
  // pre-update margin, for a caller that is the model's only user while it
  // runs (offline training): a model may hold every shard's writer lock
  // for the whole batch, so readers and other learners wait for it, and
  // may fetch an example's coordinates from memory while the one before
  // learns. The default learns one by one.
  virtual void LearnExclusive(absl::Span<const LearnItem> examples, absl::Span<double> margins) {
    for (size_t i = 0; i < examples.size(); ++i) {
      margins[i] = Learn(examples[i].features, examples[i].label, examples[i].importance);
    }
  }

  // The dense block (config.dense_namespaces), or null.
  const DenseBlock* dense_block() const { return dense_.get(); }
  DenseBlock* dense_block() { return dense_.get(); }

  virtual ModelStats Stats() const = 0;

  // Examples learned so far (the model's version); cheaper than Stats().
  virtual uint64_t Updates() const = 0;

  // The whole learned state, for snapshots: the round counters and every
  // coordinate as (8-byte little-endian key, state_size bytes of the
  // optimizer's State) records in ascending key order. Coordinates are read
  // shard by shard; the caller stops learning for a point-in-time copy.
  struct State {
    RoundContext round;
    uint32_t state_size = 0;
    std::string coordinates;
    // The dense block's learner state (empty without a dense block).
    std::string dense_state;
    // A model with variants (core/model/variant_model.h): the fields above
    // are its primary's; these are every other variant's state, in config
    // order, and the champion selection's bytes. Empty otherwise.
    std::vector<State> variants;
    std::string selection;
    // The feature admission filter's counts (FeatureAdmission::Encode) for
    // a policy that decides by them (kBloom); empty otherwise. Without them
    // a restored model would admit features a model that never restarted
    // keeps out.
    std::string admission;
    // A model with a factorization (config.factorization): every factor row
    // as (8-byte little-endian key, 2 * Factorization::row_floats() floats:
    // the factors, then their AdaGrad sums) records in ascending key order.
    // Empty otherwise, so a model without factors serializes as before.
    // factor_size: the bytes of one record's floats (0 without factors).
    uint32_t factor_size = 0;
    std::string factors;
  };
  virtual State ExportState() const = 0;

  // --- Snapshots off the learning path ---
  // A point-in-time copy of the learned state in two steps, so that learning
  // pauses only for the first. BeginStateCopy must be called while no
  // learning step is in flight (the caller holds its learners off, as
  // ModelJournal's learn lock does); it copies the round counters and the
  // dense block's state and marks the moment, which costs microseconds for
  // the sparse coordinates (copy-on-write: a learner keeps aside a
  // coordinate's state as of the moment before it first changes it, until
  // the copy has read that coordinate's shard). Learners may go on at once.
  // StateCopy::Finish, on any thread, reads every shard, sorts and encodes:
  // it returns exactly the bytes ExportState would have returned at the
  // moment of BeginStateCopy. The model must outlive the StateCopy; a copy
  // dropped unfinished ends its copy-on-write. One copy-on-write copy at a
  // time per model: BeginStateCopy while another is open copies the
  // coordinates eagerly instead (consistent, but not cheap).
  // ReadShards (optional, before Finish) does the part that takes shard
  // locks, so that a caller can run it at normal priority and Finish (the
  // sort and the encoding) at a low one: a low-priority thread holding a
  // shard's lock while descheduled would stall the learners that need it.
  class StateCopy {
   public:
    virtual ~StateCopy() = default;
    // Reads every shard's coordinates as of the moment; Finish does it if
    // not called. Call at most once, before Finish.
    virtual void ReadShards() {}
    // Call once.
    virtual State Finish() = 0;
    // ReadShards and Finish in steps, asking `stop` between them (each
    // shard read, each shard sorted, every kStopEvery coordinates encoded):
    // the first error it returns ends the copy and is returned. For work
    // that must end at a deadline or at shutdown (GetModel's state_digest).
    // Call once, instead of ReadShards and Finish. The default asks once,
    // then finishes whole (a copy that is already whole, as a dense
    // model's).
    static constexpr size_t kStopEvery = 1 << 16;
    virtual absl::StatusOr<State> FinishUnless(const std::function<absl::Status()>& stop) {
      if (absl::Status s = stop(); !s.ok()) return s;
      return Finish();
    }
  };
  virtual std::unique_ptr<StateCopy> BeginStateCopy() const = 0;

  // Replaces the learned state with `state`, which must come from a model of
  // the same optimizer (state_size must match): DataLoss otherwise. Not for
  // use while other threads learn.
  virtual absl::Status ImportState(const State& state) = 0;

  // Canonical bytes of the learned state: the round counters, then every
  // coordinate (key, state) in ascending key order. Equal bytes mean equal
  // models. An in-memory form for comparisons, not a file format.
  virtual std::string SerializeState() const = 0;

  // Hashes and scores a raw example: convenience for tools and tests.
  double Predict(const Example& example) const;

 protected:
  explicit Model(ModelConfig config)
      : config_(std::move(config)), hasher_(config_.hashing, FactorizationFields(config_)) {}

 private:
  friend absl::StatusOr<std::unique_ptr<Model>> CreateModel(const ModelConfig& config);

  const ModelConfig config_;
  const FeatureHasher hasher_;
  std::unique_ptr<DenseBlock> dense_;  // set once by CreateModel
};

// True if the state's round sum, every float of every coordinate's
// State and every factor are finite (every State is floats only; core/optim/numeric_bounds.h).
// The dense block's state is not inspected. For tests and fuzzers of the
// numeric invariant.
bool StateIsFinite(const Model::State& state);

// Validates the config and builds the model for its optimizer.
absl::StatusOr<std::unique_ptr<Model>> CreateModel(const ModelConfig& config);

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_MODEL_H_
