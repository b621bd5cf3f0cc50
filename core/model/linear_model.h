// LinearModel<Optimizer>: the Model for one per-coordinate optimizer, with
// the optimizer's typed State stored per key. See model.h for the contract.
//
// An optimizer provides State, Params, Weight(state, round) and one of two
// update shapes:
// - per coordinate (FTRL, AdaGrad, OGD, SGD): Apply(state, g_i, round) with
//   g_i = dloss/dmargin * x_i * importance, under the model's loss;
// - per example (PA, CW; see PerExampleOptimizer): PrepareStep computes an
//   example-level Step from the margin, the label, the importance, the
//   touched states and the feature values, then Apply(state, x_i, step)
//   updates each coordinate. The choice is made at compile time, so the
//   per-coordinate optimizers run exactly the code they ran before.
// Both shapes run the whole step under the writer locks of every touched
// shard, so a step stays atomic for readers.
#ifndef CLICKD_CORE_MODEL_LINEAR_MODEL_H_
#define CLICKD_CORE_MODEL_LINEAR_MODEL_H_

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "core/base/mutex.h"
#include "core/model/eviction_rank.h"
#include "core/model/factorization.h"
#include "core/model/model.h"
#include "core/model/ttl_schedule.h"
#include "core/optim/compact_ftrl.h"
#include "core/optim/loss.h"
#include "core/optim/numeric_bounds.h"
#include "core/optim/round.h"
#include "core/optim/stamped.h"
#include "core/store/compact_table.h"
#include "core/store/flat_table.h"
#include "core/store/sharded_store.h"

namespace clickd {

// The table an optimizer's states live in: the compact encoding's 32-bit
// states (with a TTL's stamp, 64) go with the compact table's 4-byte key
// remainders; every other state with full keys.
template <typename Optimizer>
inline constexpr bool kCompactEncoding =
    std::is_same_v<Optimizer, CompactFtrl> || std::is_same_v<Optimizer, Stamped<CompactFtrl>>;
// An optimizer whose states carry the epoch of their last step: a model
// with a TTL (core/optim/stamped.h).
template <typename Optimizer>
inline constexpr bool kStamped = std::is_same_v<Optimizer, Stamped<FtrlProximal>> ||
                                 std::is_same_v<Optimizer, Stamped<CompactFtrl>>;
template <typename Optimizer>
using TableFor =
    std::conditional_t<kCompactEncoding<Optimizer>, CompactTable<typename Optimizer::State>,
                       FlatTable<typename Optimizer::State>>;

// An optimizer whose step needs quantities of the whole example (PA's hinge
// loss and ||x||^2, CW's margin variance), not only each coordinate's
// gradient. PrepareStep runs after the margin pass, before any state changes.
template <typename O>
concept PerExampleOptimizer = requires(const O& o, typename O::State& s,
                                       absl::Span<typename O::State* const> states,
                                       absl::Span<const HashedFeature> features,
                                       const typename O::Step& step) {
  {
    o.PrepareStep(/*margin=*/0.0, /*label=*/0.0, /*importance=*/0.0, states, features)
    } -> std::same_as<typename O::Step>;
  o.Apply(s, /*x=*/0.0, step);
};

template <typename Optimizer>
class LinearModel final : public Model {
 public:
  using CoordinateState = typename Optimizer::State;
  static_assert(std::is_trivially_copyable_v<CoordinateState>, "State is copied byte-wise");

  LinearModel(ModelConfig config, const typename Optimizer::Params& params)
      : Model(std::move(config)),
        optimizer_(params),
        store_(this->config().num_shards, StoreBudget(this->config())),
        ttl_(kStamped<Optimizer> ? this->config().memory.ttl_rounds : 0, this->config().num_shards,
             kStampModulus),
        admission_(this->config().admission),
        factorization_(this->config().factorization.enabled()
                           ? std::make_unique<Factorization>(this->config().factorization)
                           : nullptr) {
    if (factorization_ == nullptr) return;
    for (int s = 0; s < store_.num_shards(); ++s) {
      factor_tables_.push_back(std::make_unique<FactorTable>(*factorization_));
      // Rows are a subset of the shard's coordinates.
      if (store_.limits().bounded) factor_tables_.back()->set_max_rows(store_.limits().max_count);
    }
    // A coordinate the budget evicts takes its factor row with it (under
    // the shard's writer lock, which guards the shard's table).
    store_.SetBudgetEvictionListener(
        [this](int s, uint64_t key) { factor_tables_[s]->Erase(key); });
  }

  // The share of memory.max_bytes the coordinates' tables get. With
  // factors, every coordinate may hold a factor row (FactorRowBytes), so
  // the tables get the largest share whose most coordinates' rows fit in
  // the rest: tables and rows together stay within the budget.
  static uint64_t StoreBudget(const ModelConfig& config) {
    const uint64_t max_bytes = config.memory.max_bytes;
    if (max_bytes == 0 || !config.factorization.enabled()) return max_bytes;
    const uint64_t row = FactorRowBytes(config.factorization);
    const int shards = std::max(1, config.num_shards);
    auto total = [&](uint64_t share) {
      const ShardLimits limits = Table::Limits(share, shards);
      return share + static_cast<uint64_t>(limits.max_count) * shards * row;
    };
    // Shrink the share until tables and rows fit: a few steps, each by the
    // overshoot's ratio (the bound is near-linear in the share).
    uint64_t share = max_bytes;
    for (int i = 0; i < 64 && share > 0 && total(share) > max_bytes; ++i) {
      const uint64_t next =
          static_cast<uint64_t>(static_cast<double>(share) * max_bytes / total(share) * 0.999);
      share = next < share ? next : share - 1;
    }
    return share;
  }

  double Margin(absl::Span<const HashedFeature> features) const override {
    double margin;
    Margins({&features, 1}, {&margin, 1});
    return margin;
  }

  // Reads every list under one hold of the reader locks of the shards they
  // touch (ShardedStore::WithKeysReadLocked) and one read of the round, and
  // sums each list in its own order with the same expression as a lookup
  // per feature did, so the sums are the same bit for bit.
  void Margins(absl::Span<const absl::Span<const HashedFeature>> lists,
               absl::Span<double> out) const override {
    store_.WithKeysReadLocked(lists, [&](auto&& lookup) {
      // Under the shard locks, as a learner advances it under its own.
      const RoundContext round = CurrentRound();
      LinearMargins(lookup, lists, round, out);
      if (factorization_ != nullptr) {
        for (size_t l = 0; l < lists.size(); ++l) out[l] += PairwiseMarginOf(lists[l]);
      }
    });
  }

  // Linear margins as Margins; each candidate's adds the pairwise margin of
  // it and the context merged (Factorization::CandidateMargin), with the
  // context's sums computed once.
  void SharedContextMargins(absl::Span<const absl::Span<const HashedFeature>> lists,
                            absl::Span<double> out) const override {
    if (factorization_ == nullptr || lists.empty()) return Margins(lists, out);
    store_.WithKeysReadLocked(lists, [&](auto&& lookup) {
      const RoundContext round = CurrentRound();
      LinearMargins(lookup, lists, round, out);
      thread_local std::vector<FactorTerm> context_terms;
      thread_local std::vector<FactorTerm> candidate_terms;
      thread_local Factorization::Sums context;
      thread_local Factorization::Sums scratch;
      HeldFactorTerms(lists[0], &context_terms);
      factorization_->ComputeSums(context_terms, &context, /*keep_keys=*/true);
      for (size_t l = 1; l < lists.size(); ++l) {
        HeldFactorTerms(lists[l], &candidate_terms);
        out[l] += factorization_->CandidateMargin(context, candidate_terms, &scratch);
      }
    });
  }

  // Sums |x_i| eta_i in feature order; a zero value adds nothing, even
  // with a NaN rate.
  double Uncertainty(absl::Span<const HashedFeature> features) const override {
    double u = 0;
    store_.WithKeysReadLocked(absl::MakeConstSpan(&features, 1), [&](auto&& lookup) {
      const RoundContext round = CurrentRound();
      for (const HashedFeature& f : features) {
        if (f.value == 0) continue;
        const CoordinateState* state = lookup(f.key);
        const double eta =
            optimizer_.LearningRate(state != nullptr ? *state : CoordinateState{}, round);
        u += std::abs(static_cast<double>(f.value)) * eta;
      }
    });
    return u;
  }

  // The same expression per feature as Margins.
  void Weights(absl::Span<const HashedFeature> features, absl::Span<double> out) const override {
    store_.WithKeysReadLocked(absl::MakeConstSpan(&features, 1), [&](auto&& lookup) {
      const RoundContext round = CurrentRound();
      for (size_t i = 0; i < features.size(); ++i) {
        const CoordinateState* state = lookup(features[i].key);
        out[i] = state != nullptr ? optimizer_.Weight(*state, round) : 0.0;
      }
    });
  }

  double LearnWithDense(absl::Span<const HashedFeature> all_features, const Eigen::VectorXd* dense,
                        double label, double importance) override {
    double margin = 0;
    // With a TTL: the round this step reaches, whose due shards are swept
    // once the step's locks are released.
    uint64_t learned_round = 0;
    // Holding every touched shard across both phases makes the step atomic
    // for readers, and one lookup per key serves the weight and the update.
    store_.WithKeysLocked(
        all_features,
        [&](auto& upsert) {
          margin = Step(upsert, all_features, dense, label, importance, &learned_round);
        },
        EvictionRanker());
    if constexpr (kStamped<Optimizer>) ExpireDue(learned_round);
    return margin;
  }

  void ReserveFor(absl::Span<const HashedFeature> features) override {
    if (config().admission.policy != AdmissionOptions::Policy::kAll) return;
    store_.ReserveFor(features);
    if (factorization_ == nullptr) return;
    // Room for a factor row per field feature, each shard's table under its
    // writer lock.
    std::vector<size_t> per_shard(static_cast<size_t>(store_.num_shards()), 0);
    for (const HashedFeature& f : features) {
      if (f.field != kNoField) ++per_shard[static_cast<size_t>(store_.ShardIndex(f.key))];
    }
    for (int s = 0; s < store_.num_shards(); ++s) {
      const size_t n = per_shard[static_cast<size_t>(s)];
      if (n != 0) store_.WriteExclusive(s, [&] { factor_tables_[s]->Reserve(n); });
    }
  }

  // Every shard locked once for the batch, and each example's coordinates
  // requested from memory while the one before learns. A TTL's sweeps take
  // their shard's lock, so a model with one learns one by one.
  void LearnExclusive(absl::Span<const LearnItem> examples, absl::Span<double> margins) override {
    if (ttl_.enabled()) return Model::LearnExclusive(examples, margins);
    store_.WithAllLocked([&](auto& steps) {
      uint64_t learned_round = 0;
      if (!examples.empty()) steps.Prefetch(examples[0].features);
      for (size_t i = 0; i < examples.size(); ++i) {
        if (i + 1 < examples.size()) steps.Prefetch(examples[i + 1].features);
        const LearnItem& e = examples[i];
        steps.Step(
            e.features,
            [&](auto& upsert) {
              margins[i] = Step(upsert, e.features, nullptr, e.label, e.importance, &learned_round);
            },
            EvictionRanker());
      }
    });
  }

  ModelStats Stats() const override {
    const StoreStats store = store_.Stats();
    ModelStats stats;
    stats.updates = CurrentRound().t;
    stats.coordinates = store.coordinates;
    stats.bytes = store.bytes + FactorBytes();
    stats.coordinates_evicted = store.evicted;
    stats.coordinates_expired = store.expired;
    // A slot's bytes: a compact slot keeps 4 bytes of the key.
    stats.state_bytes_per_coordinate = kCompactEncoding<Optimizer>
                                           ? sizeof(typename Table::Slot)
                                           : sizeof(uint64_t) + sizeof(CoordinateState);
    const AdmissionStats admission = admission_.Stats();
    stats.admission_sightings = admission.sightings;
    stats.admission_admitted = admission.admitted;
    stats.admission_bytes = admission.bytes;
    return stats;
  }

  uint64_t Updates() const override { return CurrentRound().t; }

  State ExportState() const override {
    State out;
    out.round = CurrentRound();
    out.state_size = sizeof(CoordinateState);
    store_.ForEachSorted([&out](uint64_t key, const CoordinateState& state) {
      AppendBytes(&out.coordinates, key);
      AppendBytes(&out.coordinates, state);
    });
    if (dense_block() != nullptr) out.dense_state = dense_block()->SerializeState();
    if (KeepsAdmissionState()) out.admission = admission_.Encode();
    ExportFactors(&out);
    return out;
  }

  std::unique_ptr<StateCopy> BeginStateCopy() const override {
    State header;
    header.round = CurrentRound();
    header.state_size = sizeof(CoordinateState);
    if (dense_block() != nullptr) header.dense_state = dense_block()->SerializeState();
    // Learners are held off now, so the filter agrees with the coordinates.
    if (KeepsAdmissionState()) header.admission = admission_.Encode();
    // The factor rows are copied whole now (no copy-on-write for them).
    ExportFactors(&header);
    if (store_.BeginCopy()) return std::make_unique<CoordinateCopy>(*this, std::move(header));
    // Another copy is open: copy every shard now, while learners are held off.
    return std::make_unique<CoordinateCopy>(*this, std::move(header), store_.CopyAll());
  }

  absl::Status ImportState(const State& in) override {
    constexpr size_t kRecord = sizeof(uint64_t) + sizeof(CoordinateState);
    if (in.state_size != sizeof(CoordinateState) || in.coordinates.size() % kRecord != 0) {
      return absl::DataLossError(absl::StrCat("state of ", in.state_size,
                                              "-byte coordinates does not fit this model's ",
                                              sizeof(CoordinateState), "-byte ones"));
    }
    if (!in.variants.empty() || !in.selection.empty()) {
      return absl::DataLossError("the state has variants; this model has none");
    }
    if ((dense_block() != nullptr) != !in.dense_state.empty()) {
      return absl::DataLossError(dense_block() != nullptr
                                     ? "the state has no dense block; this model has one"
                                     : "the state has a dense block; this model has none");
    }
    // Decoded before anything changes, so that a damaged filter leaves the
    // model as it was.
    absl::StatusOr<std::unique_ptr<FeatureAdmission>> admission = DecodeAdmission(in.admission);
    if (!admission.ok()) return admission.status();
    if (absl::Status s = CheckFactors(in); !s.ok()) return s;
    if (dense_block() != nullptr) {
      if (absl::Status s = dense_block()->RestoreState(in.dense_state); !s.ok()) return s;
    }
    if (*admission != nullptr) admission_.Replace(admission->get());
    store_.Assign(in.coordinates.size() / kRecord, [&in](size_t i) {
      std::pair<uint64_t, CoordinateState> out;
      const char* record = in.coordinates.data() + i * kRecord;
      std::memcpy(&out.first, record, sizeof(uint64_t));
      std::memcpy(&out.second, record + sizeof(uint64_t), sizeof(CoordinateState));
      return out;
    });
    ImportFactors(in);
    MutexLock lock(&round_mu_);
    round_ = in.round;
    return absl::OkStatus();
  }

  std::string SerializeState() const override {
    const State state = ExportState();
    std::string out;
    AppendBytes(&out, state.round);
    out += state.coordinates;
    out += state.dense_state;
    out += state.admission;
    // Empty without factors: such a model's bytes are what they were.
    out += state.factors;
    return out;
  }

 private:
  using Table = TableFor<Optimizer>;

  // Each list's linear margin into out[l], under WithKeysReadLocked's
  // lookup, at `round`: per list, the sum in feature order of weight x
  // value over the coordinates held.
  template <typename Lookup>
  void LinearMargins(Lookup& lookup, absl::Span<const absl::Span<const HashedFeature>> lists,
                     const RoundContext& round, absl::Span<double> out) const {
    if constexpr (kBatchWeights) {
      // Every list's weights computed together (FtrlProximal::WeightsWithRoots:
      // the same bits as Weight), so that a request of many short
      // candidates pays the batch's set-up once; a missing state's skipped.
      size_t total = 0;
      for (const auto& list : lists) total += list.size();
      thread_local std::vector<const CoordinateState*> states;
      thread_local std::vector<double> weights;
      if (states.size() < total) {
        states.resize(total);
        weights.resize(total);
      }
      size_t i = 0;
      for (const auto& list : lists) {
        for (const HashedFeature& f : list) states[i++] = lookup(f.key);
      }
      static const CoordinateState kFresh{};
      optimizer_.WeightsWithRoots(
          total, [&](size_t k) { return states[k] != nullptr ? states[k] : &kFresh; }, round,
          weights.data(), nullptr);
      i = 0;
      for (size_t l = 0; l < lists.size(); ++l) {
        double margin = 0;
        for (const HashedFeature& f : lists[l]) {
          if (states[i] != nullptr) margin += weights[i] * f.value;
          ++i;
        }
        out[l] = margin;
      }
      if (total > kKeptWeightScratch) {
        states = {};
        weights = {};
      }
    } else {
      for (size_t l = 0; l < lists.size(); ++l) {
        double margin = 0;
        for (const HashedFeature& f : lists[l]) {
          const CoordinateState* state = lookup(f.key);
          if (state != nullptr) margin += optimizer_.Weight(*state, round) * f.value;
        }
        out[l] = margin;
      }
    }
  }
  // A thread keeps LinearMargins' scratch up to this many features.
  static constexpr size_t kKeptWeightScratch = size_t{1} << 16;

  // The field features of `features` whose factor rows the model holds, as
  // terms; the caller holds their shards' locks (reader or writer). A
  // feature without a row has no factors yet and takes no part, as a
  // coordinate not held adds nothing to the linear margin.
  void HeldFactorTerms(absl::Span<const HashedFeature> features,
                       std::vector<FactorTerm>* terms) const {
    terms->clear();
    for (const HashedFeature& f : features) {
      if (f.field == kNoField) continue;
      const float* row = factor_tables_[store_.ShardIndex(f.key)]->Find(f.key);
      // The terms of a read are only read (FactorTerm holds a mutable row
      // for Factorization::Step).
      if (row != nullptr) terms->push_back({f.key, f.value, f.field, const_cast<float*>(row)});
    }
  }

  void FactorPairs(absl::Span<const HashedFeature> features,
                   std::vector<PairContribution>* out) const override {
    if (factorization_ == nullptr) return;
    const absl::Span<const HashedFeature> lists[] = {features};
    store_.WithKeysReadLocked(absl::MakeConstSpan(lists), [&](auto&&) {
      thread_local std::vector<FactorTerm> terms;
      HeldFactorTerms(features, &terms);
      factorization_->Pairs(terms, out);
    });
  }

  // The pairwise margin of one list, under its shards' reader locks.
  double PairwiseMarginOf(absl::Span<const HashedFeature> features) const {
    thread_local std::vector<FactorTerm> terms;
    thread_local Factorization::Sums sums;
    HeldFactorTerms(features, &terms);
    factorization_->ComputeSums(terms, &sums);
    return factorization_->PairwiseMargin(sums);
  }

  // A step's terms: every field feature of `features` (those admitted),
  // each given its initial row if new, under the step's writer locks.
  // Rows are inserted first and found after, since an insert may move the
  // rows of its table.
  void StepFactorTerms(absl::Span<const HashedFeature> features, std::vector<FactorTerm>* terms) {
    terms->clear();
    for (const HashedFeature& f : features) {
      if (f.field != kNoField) factor_tables_[store_.ShardIndex(f.key)]->FindOrInsert(f.key);
    }
    for (const HashedFeature& f : features) {
      if (f.field == kNoField) continue;
      terms->push_back(
          {f.key, f.value, f.field, factor_tables_[store_.ShardIndex(f.key)]->Find(f.key)});
    }
  }

  // Sets state->factors and factor_size (ExportState's layout), each
  // shard's rows read under its reader lock.
  void ExportFactors(State* state) const {
    if (factorization_ == nullptr) return;
    const size_t stride = factorization_->row_floats() * size_t{2};
    std::vector<uint64_t> keys;
    std::vector<float> rows;
    for (int s = 0; s < store_.num_shards(); ++s) {
      store_.ReadShared(s, [&] {
        factor_tables_[s]->ForEach([&](uint64_t key, const float* row) {
          keys.push_back(key);
          rows.insert(rows.end(), row, row + stride);
        });
      });
    }
    std::vector<size_t> order(keys.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
    state->factor_size = static_cast<uint32_t>(stride * sizeof(float));
    state->factors.clear();
    state->factors.reserve(keys.size() * (sizeof(uint64_t) + state->factor_size));
    for (size_t i : order) {
      AppendBytes(&state->factors, keys[i]);
      state->factors.append(reinterpret_cast<const char*>(rows.data() + i * stride),
                            state->factor_size);
    }
  }

  // Checks an imported state's factors against this model: DataLoss if
  // they do not fit. Changes nothing.
  absl::Status CheckFactors(const State& in) const {
    if (factorization_ == nullptr) {
      if (in.factor_size != 0 || !in.factors.empty()) {
        return absl::DataLossError("the state has factors; this model has none");
      }
      return absl::OkStatus();
    }
    const uint32_t size = static_cast<uint32_t>(factorization_->row_floats() * 2 * sizeof(float));
    if (in.factors.empty() && in.factor_size == 0) return absl::OkStatus();
    const size_t record = sizeof(uint64_t) + size;
    if (in.factor_size != size || in.factors.size() % record != 0) {
      return absl::DataLossError(absl::StrCat("state of ", in.factor_size,
                                              "-byte factor rows does not fit this model's ", size,
                                              "-byte ones"));
    }
    uint64_t previous = 0;
    for (size_t at = 0; at < in.factors.size(); at += record) {
      uint64_t key;
      std::memcpy(&key, in.factors.data() + at, sizeof(key));
      if (at != 0 && key <= previous) {
        return absl::DataLossError("the state's factor rows are not in ascending key order");
      }
      previous = key;
    }
    return absl::OkStatus();
  }

  // Replaces every factor row with the state's (checked by CheckFactors),
  // each shard under its writer lock.
  void ImportFactors(const State& in) {
    if (factorization_ == nullptr) return;
    const size_t stride = factorization_->row_floats() * size_t{2};
    const size_t record = sizeof(uint64_t) + stride * sizeof(float);
    std::vector<std::vector<size_t>> by_shard(static_cast<size_t>(store_.num_shards()));
    for (size_t at = 0; at < in.factors.size(); at += record) {
      uint64_t key;
      std::memcpy(&key, in.factors.data() + at, sizeof(key));
      by_shard[static_cast<size_t>(store_.ShardIndex(key))].push_back(at);
    }
    std::vector<float> row(stride);
    for (int s = 0; s < store_.num_shards(); ++s) {
      store_.WriteExclusive(s, [&] {
        FactorTable& table = *factor_tables_[s];
        table.Clear();
        for (size_t at : by_shard[static_cast<size_t>(s)]) {
          uint64_t key;
          std::memcpy(&key, in.factors.data() + at, sizeof(key));
          std::memcpy(row.data(), in.factors.data() + at + sizeof(key), stride * sizeof(float));
          table.Assign(key, row.data());
        }
      });
    }
  }

  // The factor rows' memory: each row's floats and key.
  uint64_t FactorBytes() const {
    if (factorization_ == nullptr) return 0;
    uint64_t rows = 0;
    for (int s = 0; s < store_.num_shards(); ++s) {
      store_.ReadShared(s, [&] { rows += factor_tables_[s]->size(); });
    }
    return rows * FactorRowBytes(config().factorization);
  }
  // Whether the optimizer computes many weights together, bit for bit as
  // one by one (FtrlProximal::WeightsWithRoots).
  static constexpr bool kBatchWeights =
      std::is_same_v<Optimizer, FtrlProximal> || std::is_same_v<Optimizer, Stamped<FtrlProximal>>;
  using Coordinates = typename ShardedStore<CoordinateState, Table>::Coordinates;
  static constexpr uint64_t kStampModulus = Stamped<FtrlProximal>::kStampModulus;

  // BeginStateCopy's copy: the store's copy-on-write copy, or the shards
  // already copied (`eager`).
  class CoordinateCopy final : public StateCopy {
   public:
    CoordinateCopy(const LinearModel& model, State header)
        : model_(model), header_(std::move(header)), copy_on_write_(true) {}
    CoordinateCopy(const LinearModel& model, State header, std::vector<Coordinates> eager)
        : model_(model),
          header_(std::move(header)),
          shards_(std::move(eager)),
          copy_on_write_(false) {}
    ~CoordinateCopy() override {
      if (copy_on_write_) model_.store_.EndCopy();
    }

    void ReadShards() override {
      if (!copy_on_write_) return;
      const int n = model_.store_.num_shards();
      shards_.resize(static_cast<size_t>(n));
      for (int s = 0; s < n; ++s) shards_[s] = model_.store_.CopyShard(s);
      model_.store_.EndCopy();
      copy_on_write_ = false;
    }

    State Finish() override {
      ReadShards();
      return EncodeCoordinates(std::move(header_), std::move(shards_));
    }

    absl::StatusOr<State> FinishUnless(const std::function<absl::Status()>& stop) override {
      if (copy_on_write_) {
        const int n = model_.store_.num_shards();
        shards_.resize(static_cast<size_t>(n));
        for (int s = 0; s < n; ++s) {
          // The destructor ends the copy-on-write of a copy stopped here.
          if (absl::Status st = stop(); !st.ok()) return st;
          shards_[s] = model_.store_.CopyShard(s);
        }
        model_.store_.EndCopy();
        copy_on_write_ = false;
      }
      return EncodeCoordinatesUnless(std::move(header_), std::move(shards_), stop);
    }

   private:
    const LinearModel& model_;
    State header_;
    std::vector<Coordinates> shards_;
    bool copy_on_write_;
  };

  // `header` with the coordinates of every shard as ExportState lays them
  // out: (key, state) records in ascending key order.
  static State EncodeCoordinates(State header, std::vector<Coordinates> shards) {
    size_t total = 0;
    for (const Coordinates& shard : shards) total += shard.size();
    Coordinates all;
    all.reserve(total);
    for (Coordinates& shard : shards) {
      all.insert(all.end(), shard.begin(), shard.end());
      Coordinates().swap(shard);
    }
    std::sort(all.begin(), all.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    header.coordinates.reserve(total * (sizeof(uint64_t) + sizeof(CoordinateState)));
    for (const auto& [key, state] : all) {
      AppendBytes(&header.coordinates, key);
      AppendBytes(&header.coordinates, state);
    }
    return header;
  }

  // EncodeCoordinates in steps, asking `stop` between them: each shard is
  // sorted alone, then the shards are merged (keys are distinct across
  // shards, so the bytes are the same). Each step is bounded by a shard's
  // size or StateCopy::kStopEvery coordinates.
  static absl::StatusOr<State> EncodeCoordinatesUnless(State header,
                                                       std::vector<Coordinates> shards,
                                                       const std::function<absl::Status()>& stop) {
    constexpr auto by_key = [](const auto& a, const auto& b) { return a.first < b.first; };
    size_t total = 0;
    for (Coordinates& shard : shards) {
      if (absl::Status s = stop(); !s.ok()) return s;
      std::sort(shard.begin(), shard.end(), by_key);
      total += shard.size();
    }
    // A min-heap of (key, shard) over each shard's next coordinate.
    std::vector<std::pair<uint64_t, size_t>> heap;
    std::vector<size_t> next(shards.size(), 0);
    for (size_t i = 0; i < shards.size(); ++i) {
      if (!shards[i].empty()) heap.emplace_back(shards[i][0].first, i);
    }
    constexpr auto later = [](const auto& a, const auto& b) { return a.first > b.first; };
    std::make_heap(heap.begin(), heap.end(), later);
    header.coordinates.reserve(total * (sizeof(uint64_t) + sizeof(CoordinateState)));
    for (size_t done = 0; !heap.empty(); ++done) {
      if (done % StateCopy::kStopEvery == 0) {
        if (absl::Status s = stop(); !s.ok()) return s;
      }
      std::pop_heap(heap.begin(), heap.end(), later);
      const size_t i = heap.back().second;
      const auto& [key, state] = shards[i][next[i]];
      AppendBytes(&header.coordinates, key);
      AppendBytes(&header.coordinates, state);
      if (++next[i] < shards[i].size()) {
        heap.back().first = shards[i][next[i]].first;
        std::push_heap(heap.begin(), heap.end(), later);
      } else {
        heap.pop_back();
        Coordinates().swap(shards[i]);
      }
    }
    return header;
  }

  // Whether the admission policy decides by counts that are model state.
  bool KeepsAdmissionState() const {
    return config().admission.policy == AdmissionOptions::Policy::kBloom;
  }

  // The filter of an imported state's `bytes` (nullptr for a policy that
  // keeps none); DataLoss if they are missing, damaged or of other options.
  absl::StatusOr<std::unique_ptr<FeatureAdmission>> DecodeAdmission(std::string_view bytes) const {
    if (!KeepsAdmissionState()) {
      if (!bytes.empty()) {
        return absl::DataLossError("the state has an admission filter; this model keeps none");
      }
      return std::unique_ptr<FeatureAdmission>();
    }
    if (bytes.empty()) {
      return absl::DataLossError(
          "the state has no admission filter; this model's policy needs one");
    }
    auto decoded = FeatureAdmission::Decode(config().admission, bytes);
    if (!decoded.ok()) return absl::DataLossError(decoded.status().message());
    return decoded;
  }

  // One learning step under the locks of its shards (WithKeysLocked's or
  // WithAllLocked's): returns the pre-update margin and sets
  // *learned_round to the round it reaches.
  template <typename Upsert>
  double Step(Upsert& upsert, absl::Span<const HashedFeature> all_features,
              const Eigen::VectorXd* dense, double label, double importance,
              uint64_t* learned_round) {
    double margin = 0;
    DenseBlock* block = dense != nullptr ? dense_block() : nullptr;
    thread_local std::vector<CoordinateState*> states;
    thread_local std::vector<HashedFeature> admitted;
    thread_local std::vector<double> weights;
    states.clear();
    weights.clear();
    const RoundContext before = CurrentRound();
    uint64_t new_keys = 0;
    // With feature admission, a feature not stored and not admitted at
    // this sighting takes no part in the step, as if it were absent; so
    // does one for which a budgeted shard has no room (only when the
    // step's own keys fill it).
    const bool admitting = config().admission.policy != AdmissionOptions::Policy::kAll;
    const bool filtering = admitting || store_.limits().bounded;
    admitted.clear();
    for (const HashedFeature& f : all_features) {
      auto [state, inserted] =
          filtering ? upsert.IfAdmitted(
                          f.key, [&] { return !admitting || admission_.Admit(f.key, before.t); })
                    : upsert(f.key);
      if (state == nullptr) continue;
      new_keys += inserted;
      states.push_back(state);
      if (filtering) admitted.push_back(f);
    }
    const absl::Span<const HashedFeature> features =
        filtering ? absl::Span<const HashedFeature>(admitted) : all_features;
    if constexpr (kStamped<Optimizer>) {
      // Every coordinate of the step has a step now (a zero gradient
      // too: its feature was seen).
      const uint32_t epoch = ttl_.EpochAt(before.t);
      for (CoordinateState* state : states) state->stamp = epoch;
    }
    // The weights in a loop of their own: each is a chain of a square
    // root and divisions, and with no lookup between them the CPU
    // works on many at once. The margin sums in feature order as before.
    // FTRL's also keeps each coordinate's sqrt(n) for its update.
    constexpr bool kKeepsRoots = requires(FtrlProximal::Root * root) {
      optimizer_.WeightWithRoot(*states[0], before, root);
    };
    thread_local std::vector<FtrlProximal::Root> roots;
    weights.resize(states.size());
    if constexpr (kKeepsRoots) {
      roots.resize(states.size());
      optimizer_.WeightsWithRoots(
          states.size(), [&](size_t i) { return states[i]; }, before, weights.data(), roots.data());
    } else {
      for (size_t i = 0; i < states.size(); ++i) {
        weights[i] = optimizer_.Weight(*states[i], before);
      }
    }
    for (size_t i = 0; i < states.size(); ++i) margin += weights[i] * features[i].value;
    if (block != nullptr) margin += block->Margin(*dense);
    // The factors' pairwise margin, at the factors before the step.
    thread_local std::vector<FactorTerm> terms;
    thread_local Factorization::Sums sums;
    if (factorization_ != nullptr) {
      StepFactorTerms(features, &terms);
      factorization_->ComputeSums(terms, &sums);
      margin += factorization_->PairwiseMargin(sums);
    }
    const double dloss = LossGradient(config().loss, margin, label) * importance;
    // The last line of the numeric invariant (core/optim/numeric_bounds.h):
    // each coordinate's gradient is clamped and each state saturated, which
    // leaves ordinary steps bit-identical.
    double grad_norm_sq = 0;
    for (const HashedFeature& f : features) {
      const double g = ClampGradient(dloss * f.value);
      grad_norm_sq += g * g;
    }
    // Every key is inserted, even with a zero gradient: the example's
    // attributes have been seen (global OGD's diameter counts them).
    const RoundContext round = AdvanceRound(grad_norm_sq, new_keys);
    *learned_round = round.t;
    if constexpr (PerExampleOptimizer<Optimizer>) {
      const typename Optimizer::Step step =
          optimizer_.PrepareStep(margin, label, importance, states, features);
      for (size_t i = 0; i < features.size(); ++i) {
        optimizer_.Apply(*states[i], features[i].value, step);
        SaturateState(*states[i]);
      }
    } else if constexpr (kCompactEncoding<Optimizer>) {
      // Each stored result is rounded with bits drawn from its key and
      // the round (core/optim/compact_ftrl.h).
      const bool reuse = optimizer_.WeightIndependentOfRound();
      for (size_t i = 0; i < features.size(); ++i) {
        const double g = ClampGradient(dloss * features[i].value);
        const double w = reuse ? weights[i] : optimizer_.Weight(*states[i], round);
        optimizer_.ApplyRounded(*states[i], g, w, features[i].key, round);
      }
    } else if constexpr (kKeepsRoots) {
      // Float FTRL: the weight pass's weights and roots serve the update,
      // unless L1 times t makes the weight depend on the round.
      const bool reuse = optimizer_.WeightIndependentOfRound();
      for (size_t i = 0; i < features.size(); ++i) {
        const double g = ClampGradient(dloss * features[i].value);
        if (reuse) {
          optimizer_.ApplyWithWeightAndRoot(*states[i], g, weights[i], roots[i]);
        } else {
          optimizer_.Apply(*states[i], g, round);
        }
        SaturateState(*states[i]);
      }
    } else {
      for (size_t i = 0; i < features.size(); ++i) {
        optimizer_.Apply(*states[i], ClampGradient(dloss * features[i].value), round);
        SaturateState(*states[i]);
      }
    }
    // The factors step on the same loss gradient.
    if (factorization_ != nullptr) factorization_->Step(terms, sums, dloss);
    // Under the shard locks, so that a concurrent learner of the same
    // keys sees the dense part of this step too (lock order: shards, then
    // the dense block's).
    if (block != nullptr) block->Update(*dense, ClampGradient(dloss));
    return margin;
  }

  // The budget's ranking, made once per eviction pass: every coordinate
  // ranked at the same round.
  auto EvictionRanker() const {
    return [this] {
      return [this, round = CurrentRound()](const CoordinateState& s) {
        return RankForEviction(optimizer_, s, round);
      };
    };
  }

  // Sweeps the shards due once the model has learned `round` examples:
  // each loses the coordinates whose last step is too old (TtlSchedule).
  void ExpireDue(uint64_t round) {
    ttl_.ForEachDue(round, [&](int s) {
      const uint32_t now = ttl_.EpochAt(round);
      // A coordinate's factor row goes with it: a key seen again starts
      // from its initial factors.
      store_.EvictWhere(
          s,
          [now](const CoordinateState& state) {
            return !TtlSchedule::Kept(Optimizer::Age(state.stamp, now));
          },
          [&](uint64_t key) {
            if (factorization_ != nullptr) factor_tables_[s]->Erase(key);
          });
    });
  }

  template <typename T>
  static void AppendBytes(std::string* out, const T& value) {
    out->append(reinterpret_cast<const char*>(&value), sizeof(T));
  }

  RoundContext CurrentRound() const {
    MutexLock lock(&round_mu_);
    return round_;
  }

  RoundContext AdvanceRound(double grad_norm_sq, uint64_t new_keys) {
    MutexLock lock(&round_mu_);
    round_.t += 1;
    round_.sum_grad_norm_sq = std::min(round_.sum_grad_norm_sq + grad_norm_sq, kMaxRoundSum);
    round_.coordinates += new_keys;
    return round_;
  }

  const Optimizer optimizer_;
  ShardedStore<CoordinateState, Table> store_;
  // When each shard is swept for coordinates past the TTL
  // (config().memory.ttl_rounds; disabled for an unstamped optimizer).
  const TtlSchedule ttl_;
  // Which features not stored yet get a coordinate (config().admission);
  // with policy kAll, Learn never asks it.
  FeatureAdmission admission_;
  // The factorization (config().factorization), or null; with one, a table
  // of factor rows per shard of store_, each guarded by that shard's lock
  // (taken by the store's WithKeys*Locked, WithAllLocked, ReadShared and
  // WriteExclusive, which the analysis cannot follow). A key's row is made
  // when a step first learns it as a field feature and erased when the
  // TTL (ExpireDue) or the memory budget (the store's eviction listener)
  // evicts its coordinate.
  const std::unique_ptr<const Factorization> factorization_;
  std::vector<std::unique_ptr<FactorTable>> factor_tables_;
  mutable Mutex round_mu_;
  RoundContext round_ ABSL_GUARDED_BY(round_mu_);
};

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_LINEAR_MODEL_H_
