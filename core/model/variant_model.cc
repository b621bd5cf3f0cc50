#include "core/model/variant_model.h"

#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/coding.h"
#include "core/base/quote.h"
#include "core/optim/loss.h"

namespace clickd {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr uint32_t kSelectionVersion = 1;

absl::Status BadSelection(const std::string& what) {
  return absl::DataLossError(absl::StrCat("variant selection state is corrupt: ", what));
}

}  // namespace

ModelConfig VariantModelConfig(const ModelConfig& config, const ModelVariant& variant) {
  ModelConfig out = config;
  out.optimizer = variant.optimizer;
  out.admission = variant.admission;
  out.factorization = variant.factorization;
  out.memory.max_bytes = MemberMemoryBytes(config);
  out.variants.clear();
  return out;
}

absl::Status ValidateVariants(const ModelConfig& config) {
  if (config.variants.empty()) return absl::OkStatus();
  if (config.variants.size() > kMaxVariants) {
    return absl::InvalidArgumentError(
        absl::StrCat("variants: ", config.variants.size(), " variants; at most ", kMaxVariants));
  }
  if (config.optimizer.type == OptimizerType::kDense || !config.dense_namespaces.empty()) {
    return absl::InvalidArgumentError(
        "variants: a model with a dense learner or a dense block takes no variants");
  }
  for (size_t i = 0; i < config.variants.size(); ++i) {
    const ModelVariant& v = config.variants[i];
    const std::string field = absl::StrCat("variants[", i, "]");
    if (absl::Status s = ValidateNameChars(v.name, field + ".name", kMaxVariantNameLength);
        !s.ok()) {
      return s;
    }
    if (v.name == kPrimaryVariant) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".name \"", std::string(kPrimaryVariant),
                       "\" is the model's own optimizer; pick another"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (config.variants[j].name == v.name) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".name ", Quote(v.name), " repeats variants[", j, "]"));
      }
    }
    if (v.optimizer.type == OptimizerType::kDense) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".optimizer: a variant takes a per-coordinate optimizer"));
    }
    if (absl::Status s = ValidateOptimizerConfig(v.optimizer); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".", s.message()));
    }
    if (absl::Status s = ValidateAdmissionOptions(v.admission, field + ".admission"); !s.ok()) {
      return s;
    }
    if (IsBinaryClassifier(v.optimizer.type) && config.loss != LossType::kHinge) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".optimizer ", std::string(OptimizerTypeName(v.optimizer.type)),
                       " is a binary classifier and takes loss hinge; the model's loss is ",
                       std::string(LossTypeName(config.loss))));
    }
    // The variant's factorization, as the model's would be validated
    // with the variant's optimizer; and the model hashes once, so every
    // factorized member factors the same fields.
    if (absl::Status s = ValidateFactorizationConfig(VariantModelConfig(config, v)); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".", s.message()));
    }
    const std::vector<std::string>& fields = FactorizationFields(config);
    if (v.factorization.enabled() && v.factorization.fields != fields) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".factorization.fields are ", absl::StrJoin(v.factorization.fields, ","),
          "; every factorized member of a model factors the same fields, here ",
          absl::StrJoin(fields, ",")));
    }
  }
  return absl::OkStatus();
}

VariantModel::VariantModel(ModelConfig config, std::vector<std::unique_ptr<Model>> members)
    : Model(std::move(config)),
      members_(std::move(members)),
      recent_decay_(std::exp2(-1.0 / kSelectionHalfLife)) {
  names_.emplace_back(kPrimaryVariant);
  for (const ModelVariant& v : this->config().variants) names_.push_back(v.name);
  selection_.scores.resize(members_.size());
}

void VariantModel::SharedContextMargins(absl::Span<const absl::Span<const HashedFeature>> lists,
                                        absl::Span<double> out) const {
  members_[champion_.load(std::memory_order_acquire)]->SharedContextMargins(lists, out);
}

void VariantModel::FactorPairs(absl::Span<const HashedFeature> features,
                               std::vector<PairContribution>* out) const {
  members_[champion_.load(std::memory_order_acquire)]->FactorPairs(features, out);
}

double VariantModel::Margin(absl::Span<const HashedFeature> features) const {
  return members_[champion_.load(std::memory_order_acquire)]->Margin(features);
}

void VariantModel::Margins(absl::Span<const absl::Span<const HashedFeature>> lists,
                           absl::Span<double> out) const {
  members_[champion_.load(std::memory_order_acquire)]->Margins(lists, out);
}

double VariantModel::Uncertainty(absl::Span<const HashedFeature> features) const {
  return members_[champion_.load(std::memory_order_acquire)]->Uncertainty(features);
}

void VariantModel::Weights(absl::Span<const HashedFeature> features, absl::Span<double> out) const {
  members_[champion_.load(std::memory_order_acquire)]->Weights(features, out);
}

double VariantModel::LearnWithDense(absl::Span<const HashedFeature> features,
                                    const Eigen::VectorXd* dense, double label, double importance) {
  // Validated configs have no dense block; `dense` is null.
  (void)dense;
  thread_local std::vector<double> margins, losses;
  margins.resize(members_.size());
  losses.resize(members_.size());
  for (size_t i = 0; i < members_.size(); ++i) {
    margins[i] = members_[i]->Learn(features, label, importance);
    losses[i] = Loss(config().loss, margins[i], label);
  }
  const uint32_t served = champion_.load(std::memory_order_acquire);
  Select(losses, importance);
  return margins[served];
}

void VariantModel::Select(absl::Span<const double> losses, double importance) {
  MutexLock lock(&selection_mu_);
  Selection& s = selection_;
  for (size_t i = 0; i < losses.size(); ++i) {
    Score& score = s.scores[i];
    score.examples += 1;
    score.weight += importance;
    score.loss += importance * losses[i];
    score.recent_weight = recent_decay_ * score.recent_weight + importance;
    score.recent_loss = recent_decay_ * score.recent_loss + importance * losses[i];
  }
  s.since_change += 1;
  if (s.since_change < kSelectionHalfLife) return;
  // A plain function of the scores rather than a lambda over the guarded
  // selection, which the thread-safety analysis cannot follow.
  const std::vector<Score>& scores = s.scores;
  uint32_t best = s.champion;
  for (uint32_t i = 0; i < scores.size(); ++i) {
    if (RecentLoss(scores[i]) < RecentLoss(scores[best])) best = i;
  }
  if (best != s.champion &&
      RecentLoss(scores[best]) < RecentLoss(scores[s.champion]) * (1 - kSelectionMinGain)) {
    s.champion = best;
    s.since_change = 0;
    champion_.store(best, std::memory_order_release);
  }
}

ModelStats VariantModel::Stats() const {
  ModelStats total = members_.front()->Stats();
  for (size_t i = 1; i < members_.size(); ++i) {
    const ModelStats m = members_[i]->Stats();
    total.coordinates += m.coordinates;
    total.bytes += m.bytes;
    total.admission_sightings += m.admission_sightings;
    total.admission_admitted += m.admission_admitted;
    total.admission_bytes += m.admission_bytes;
    total.coordinates_evicted += m.coordinates_evicted;
    total.coordinates_expired += m.coordinates_expired;
  }
  return total;
}

std::string VariantModel::EncodeSelection() const {
  MutexLock lock(&selection_mu_);
  std::string out;
  coding::PutFixed32(&out, kSelectionVersion);
  coding::PutFixed32(&out, static_cast<uint32_t>(selection_.scores.size()));
  coding::PutFixed32(&out, selection_.champion);
  coding::PutFixed64(&out, selection_.since_change);
  for (const Score& s : selection_.scores) {
    coding::PutFixed64(&out, s.examples);
    for (double v : {s.weight, s.loss, s.recent_weight, s.recent_loss}) coding::PutDouble(&out, v);
  }
  return out;
}

namespace {

// Decodes the selection's bytes (see EncodeSelection) for `variants`
// variants into the parts the model keeps.
struct DecodedSelection {
  uint32_t champion = 0;
  uint64_t since_change = 0;
  std::vector<std::array<double, 4>> sums;
  std::vector<uint64_t> examples;
};

absl::StatusOr<DecodedSelection> DecodeSelection(std::string_view bytes, size_t variants) {
  coding::Decoder in(bytes);
  uint32_t version = 0, count = 0;
  DecodedSelection out;
  if (!in.GetFixed32(&version) || version != kSelectionVersion) {
    return BadSelection("unknown version");
  }
  if (!in.GetFixed32(&count) || count != variants) {
    return BadSelection(absl::StrCat(count, " variants; the model has ", variants));
  }
  if (!in.GetFixed32(&out.champion) || out.champion >= variants ||
      !in.GetFixed64(&out.since_change)) {
    return BadSelection("champion out of range or truncated");
  }
  for (size_t i = 0; i < variants; ++i) {
    uint64_t examples = 0;
    std::array<double, 4> sums{};
    if (!in.GetFixed64(&examples)) return BadSelection("truncated");
    for (double& v : sums) {
      if (!in.GetDouble(&v) || !std::isfinite(v) || v < 0) {
        return BadSelection("a loss sum is truncated, negative or not finite");
      }
    }
    out.examples.push_back(examples);
    out.sums.push_back(sums);
  }
  if (!in.remaining().empty()) return BadSelection("trailing bytes");
  return out;
}

}  // namespace

absl::Status CheckSelectionState(std::string_view bytes, size_t variants) {
  return DecodeSelection(bytes, variants).status();
}

Model::State VariantModel::ExportState() const {
  State out = members_.front()->ExportState();
  for (size_t i = 1; i < members_.size(); ++i) out.variants.push_back(members_[i]->ExportState());
  out.selection = EncodeSelection();
  return out;
}

namespace {

// BeginStateCopy's copy: one per variant, begun at the same moment (the
// caller holds learners off), and the selection as of that moment.
class VariantCopy final : public Model::StateCopy {
 public:
  VariantCopy(std::vector<std::unique_ptr<Model::StateCopy>> copies, std::string selection)
      : copies_(std::move(copies)), selection_(std::move(selection)) {}

  void ReadShards() override {
    for (auto& copy : copies_) copy->ReadShards();
  }

  Model::State Finish() override {
    Model::State out = copies_.front()->Finish();
    for (size_t i = 1; i < copies_.size(); ++i) out.variants.push_back(copies_[i]->Finish());
    out.selection = std::move(selection_);
    return out;
  }

  absl::StatusOr<Model::State> FinishUnless(const std::function<absl::Status()>& stop) override {
    absl::StatusOr<Model::State> out = copies_.front()->FinishUnless(stop);
    if (!out.ok()) return out.status();
    for (size_t i = 1; i < copies_.size(); ++i) {
      absl::StatusOr<Model::State> part = copies_[i]->FinishUnless(stop);
      if (!part.ok()) return part.status();
      out->variants.push_back(*std::move(part));
    }
    out->selection = std::move(selection_);
    return out;
  }

 private:
  std::vector<std::unique_ptr<Model::StateCopy>> copies_;
  std::string selection_;
};

}  // namespace

std::unique_ptr<Model::StateCopy> VariantModel::BeginStateCopy() const {
  std::vector<std::unique_ptr<StateCopy>> copies;
  for (const auto& m : members_) copies.push_back(m->BeginStateCopy());
  return std::make_unique<VariantCopy>(std::move(copies), EncodeSelection());
}

absl::Status VariantModel::ImportState(const State& state) {
  if (state.variants.size() + 1 != members_.size()) {
    return absl::DataLossError(absl::StrCat("the state has ", state.variants.size() + 1,
                                            " variants; this model has ", members_.size()));
  }
  auto selection = DecodeSelection(state.selection, members_.size());
  if (!selection.ok()) return selection.status();
  // Every variant's sizes before anything changes, so that a state that
  // does not fit changes nothing.
  for (size_t i = 0; i < members_.size(); ++i) {
    const State& part = i == 0 ? state : state.variants[i - 1];
    const uint64_t expected = members_[i]->Stats().state_bytes_per_coordinate - sizeof(uint64_t);
    if (part.state_size != expected || (i > 0 && !part.variants.empty()) ||
        part.coordinates.size() % (sizeof(uint64_t) + expected) != 0) {
      return absl::DataLossError(absl::StrCat("variant ", Quote(names_[i]), ": state of ",
                                              part.state_size,
                                              "-byte coordinates does not fit "
                                              "its ",
                                              expected, "-byte ones"));
    }
  }
  State primary = state;
  primary.variants.clear();
  primary.selection.clear();
  if (absl::Status s = members_[0]->ImportState(primary); !s.ok()) return s;
  for (size_t i = 1; i < members_.size(); ++i) {
    if (absl::Status s = members_[i]->ImportState(state.variants[i - 1]); !s.ok()) return s;
  }
  MutexLock lock(&selection_mu_);
  selection_.champion = selection->champion;
  selection_.since_change = selection->since_change;
  for (size_t i = 0; i < members_.size(); ++i) {
    Score& s = selection_.scores[i];
    s.examples = selection->examples[i];
    s.weight = selection->sums[i][0];
    s.loss = selection->sums[i][1];
    s.recent_weight = selection->sums[i][2];
    s.recent_loss = selection->sums[i][3];
  }
  champion_.store(selection_.champion, std::memory_order_release);
  return absl::OkStatus();
}

std::string VariantModel::SerializeState() const {
  std::string out = members_.front()->SerializeState();
  for (size_t i = 1; i < members_.size(); ++i) {
    const std::string part = members_[i]->SerializeState();
    coding::PutFixed64(&out, part.size());
    out += part;
  }
  out += EncodeSelection();
  return out;
}

const Model* VariantModel::Variant(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return members_[i].get();
  }
  return nullptr;
}

std::string_view VariantModel::Champion() const {
  return names_[champion_.load(std::memory_order_acquire)];
}

absl::StatusOr<ScoringModel> ModelForVariant(const Model& model, std::string_view variant) {
  const auto* variants = dynamic_cast<const VariantModel*>(&model);
  if (variants == nullptr) {
    if (variant.empty()) return ScoringModel{&model, {}};
    return absl::InvalidArgumentError(absl::StrCat("variant ", Quote(variant), ": model ",
                                                   Quote(model.config().name), " has no variants"));
  }
  const std::string_view name = variant.empty() ? variants->Champion() : variant;
  const Model* member = variants->Variant(name);
  if (member == nullptr) {
    std::string known(kPrimaryVariant);
    for (const ModelVariant& v : model.config().variants) absl::StrAppend(&known, ", ", v.name);
    return absl::InvalidArgumentError(absl::StrCat("variant ", Quote(variant),
                                                   " is not one of model ",
                                                   Quote(model.config().name), "'s: ", known));
  }
  return ScoringModel{member, name};
}

std::vector<VariantReport> VariantModel::Reports() const {
  std::vector<VariantReport> out;
  for (size_t i = 0; i < members_.size(); ++i) {
    VariantReport r;
    r.name = names_[i];
    r.optimizer = std::string(OptimizerTypeName(members_[i]->config().optimizer.type));
    const ModelStats stats = members_[i]->Stats();
    r.coordinates = stats.coordinates;
    r.bytes = stats.bytes;
    out.push_back(std::move(r));
  }
  MutexLock lock(&selection_mu_);
  for (size_t i = 0; i < members_.size(); ++i) {
    const Score& s = selection_.scores[i];
    out[i].champion = i == selection_.champion;
    out[i].examples = s.examples;
    out[i].loss = s.weight > 0 ? s.loss / s.weight : kNaN;
    out[i].recent_loss = RecentLoss(s);
  }
  return out;
}

}  // namespace clickd
