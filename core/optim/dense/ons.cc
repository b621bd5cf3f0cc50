#include "core/optim/dense/ons.h"

#include <cmath>
#include <string>
#include <string_view>

#include "core/optim/dense/dense_params.h"
#include "core/optim/dense/dense_state_codec.h"

namespace clickd {
namespace {

constexpr std::string_view kKind = "ons";

class Ons final : public DenseOptimizer {
 public:
  Ons(const OnsParams& params, int dim)
      : params_(params),
        h_inv_(Eigen::MatrixXd::Identity(dim, dim) / params.delta),
        weights_(Eigen::VectorXd::Zero(dim)) {}

  int dim() const override { return static_cast<int>(weights_.size()); }
  const Eigen::VectorXd& weights() const override { return weights_; }
  uint64_t rounds() const override { return rounds_; }

  void Update(const Eigen::VectorXd& g) override {
    const double w = std::pow(static_cast<double>(rounds_ + 1), -params_.weight_power);
    // Only the lower triangle of H^{-1} is kept up to date, so it stays
    // exactly symmetric.
    const Eigen::VectorXd u = h_inv_.selfadjointView<Eigen::Lower>() * g;
    const double denom = 1.0 + w * g.dot(u);
    h_inv_.selfadjointView<Eigen::Lower>().rankUpdate(u, -w / denom);
    weights_ -= (params_.eta / denom) * u;  // eta H_t^{-1} g_t
    ++rounds_;
  }

  std::string SerializeState() const override {
    dense_state::Writer w(kKind, dim(), 0, rounds_);
    w.Put(h_inv_);
    w.Put(weights_);
    return std::move(w).Finish();
  }

  absl::Status RestoreState(std::string_view bytes) override {
    absl::StatusOr<dense_state::Reader> r = dense_state::Reader::Open(bytes, kKind, dim(), 0);
    if (!r.ok()) return r.status();
    absl::StatusOr<Eigen::MatrixXd> h_inv = r->Matrix("H^-1", dim(), dim());
    if (!h_inv.ok()) return h_inv.status();
    absl::StatusOr<Eigen::VectorXd> weights = r->Vector("weights", dim());
    if (!weights.ok()) return weights.status();
    if (absl::Status s = r->Finish(); !s.ok()) return s;
    h_inv_ = *std::move(h_inv);
    weights_ = *std::move(weights);
    rounds_ = r->rounds();
    return absl::OkStatus();
  }

  uint64_t StateBytes() const override {
    return dense_state::HeapBytes(h_inv_) + dense_state::HeapBytes(weights_);
  }

 private:
  const OnsParams params_;
  Eigen::MatrixXd h_inv_;  // H_t^{-1}; lower triangle authoritative
  Eigen::VectorXd weights_;
  uint64_t rounds_ = 0;
};

}  // namespace

absl::Status ValidateOnsParams(const OnsParams& params, int dim) {
  absl::Status s = dense_params::CheckPositive("eta", params.eta);
  s.Update(dense_params::CheckPositive("delta", params.delta));
  s.Update(dense_params::CheckInRange("weight_power", params.weight_power, 0, 1));
  s.Update(dense_params::CheckDim(dim));
  return s;
}

absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewOns(const OnsParams& params, int dim) {
  if (absl::Status s = ValidateOnsParams(params, dim); !s.ok()) return s;
  return std::make_unique<Ons>(params, dim);
}

}  // namespace clickd
