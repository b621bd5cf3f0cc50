#include "core/model/dense_model.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/optim/loss.h"
#include "core/optim/numeric_bounds.h"

namespace clickd {

double DenseModel::Margin(absl::Span<const HashedFeature> features) const {
  return dense_block()->SparseMargin(features);
}

void DenseModel::Margins(absl::Span<const absl::Span<const HashedFeature>> lists,
                         absl::Span<double> out) const {
  ReaderMutexLock lock(&learn_mu_);
  for (size_t i = 0; i < lists.size(); ++i) out[i] = dense_block()->SparseMargin(lists[i]);
}

double DenseModel::Uncertainty(absl::Span<const HashedFeature>) const {
  return std::numeric_limits<double>::quiet_NaN();
}

void DenseModel::Weights(absl::Span<const HashedFeature> features, absl::Span<double> out) const {
  ReaderMutexLock lock(&learn_mu_);
  for (size_t i = 0; i < features.size(); ++i) {
    // The sparse margin of the one feature with value 1 is its weight
    // exactly (0 + w * 1.0f), 0 beyond the slots.
    const HashedFeature unit{features[i].key, 1.0f};
    out[i] = dense_block()->SparseMargin({&unit, 1});
  }
}

double DenseModel::LearnWithDense(absl::Span<const HashedFeature> features,
                                  const Eigen::VectorXd* dense, double label, double importance) {
  DenseBlock* block = dense_block();
  thread_local Eigen::VectorXd x;
  if (dense != nullptr) {
    x = *dense;
  } else {
    x.setZero(block->dim());
  }
  block->PlaceSparse(features, &x);
  MutexLock lock(&learn_mu_);
  const double margin = block->Margin(x);
  // Clamped and saturated as LinearModel does (core/optim/numeric_bounds.h).
  const double dloss = ClampGradient(LossGradient(config().loss, margin, label) * importance);
  block->Update(x, dloss);
  round_.t += 1;
  round_.sum_grad_norm_sq =
      std::min(round_.sum_grad_norm_sq + dloss * dloss * x.squaredNorm(), kMaxRoundSum);
  return margin;
}

ModelStats DenseModel::Stats() const {
  ModelStats stats;
  stats.updates = Updates();
  stats.coordinates = static_cast<uint64_t>(dense_block()->dim());
  stats.bytes = dense_block()->StateBytes();
  stats.state_bytes_per_coordinate = stats.bytes / std::max<uint64_t>(1, stats.coordinates);
  return stats;
}

uint64_t DenseModel::Updates() const {
  MutexLock lock(&learn_mu_);
  return round_.t;
}

Model::State DenseModel::ExportState() const {
  MutexLock lock(&learn_mu_);
  State out;
  out.round = round_;
  out.state_size = 1;  // no coordinates: the whole state is the dense block's
  out.dense_state = dense_block()->SerializeState();
  return out;
}

namespace {

// A state copied whole when the copy began.
class CopiedState final : public Model::StateCopy {
 public:
  explicit CopiedState(Model::State state) : state_(std::move(state)) {}
  Model::State Finish() override { return std::move(state_); }

 private:
  Model::State state_;
};

}  // namespace

std::unique_ptr<Model::StateCopy> DenseModel::BeginStateCopy() const {
  return std::make_unique<CopiedState>(ExportState());
}

absl::Status DenseModel::ImportState(const State& in) {
  if (in.state_size != 1 || !in.coordinates.empty()) {
    return absl::DataLossError("the state holds per-coordinate records; this dense model has none");
  }
  if (!in.variants.empty() || !in.selection.empty()) {
    return absl::DataLossError("the state has variants; this model has none");
  }
  if (!in.admission.empty()) {
    return absl::DataLossError("the state has an admission filter; this dense model has none");
  }
  MutexLock lock(&learn_mu_);
  if (absl::Status s = dense_block()->RestoreState(in.dense_state); !s.ok()) return s;
  round_ = in.round;
  return absl::OkStatus();
}

std::string DenseModel::SerializeState() const {
  const State state = ExportState();
  std::string out(sizeof(state.round), '\0');
  std::memcpy(out.data(), &state.round, sizeof(state.round));
  return out + state.dense_state;
}

}  // namespace clickd
