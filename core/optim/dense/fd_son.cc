#include "core/optim/dense/fd_son.h"

#include <cmath>
#include <string>
#include <string_view>

#include "core/optim/dense/dense_fd_sketch.h"
#include "core/optim/dense/dense_params.h"
#include "core/optim/dense/dense_state_codec.h"

namespace clickd {
namespace {

constexpr std::string_view kKind = "fd_son";

class FdSon final : public DenseOptimizer {
 public:
  FdSon(const FdSonParams& params, int dim)
      : params_(params), sketch_(params.tau, dim), weights_(Eigen::VectorXd::Zero(dim)) {}

  int dim() const override { return static_cast<int>(weights_.size()); }
  const Eigen::VectorXd& weights() const override { return weights_; }
  uint64_t rounds() const override { return rounds_; }

  void Update(const Eigen::VectorXd& g) override {
    const double w = std::pow(static_cast<double>(rounds_ + 1), -params_.weight_power);
    const FdSketch::Svd& svd = sketch_.Insert(std::sqrt(w) * g);
    const Eigen::VectorXd spectrum = svd.sigma.cwiseAbs2();  // S^T S = V Sigma'^2 V^T
    weights_ -= params_.eta * ApplyWoodburyInverse(svd.vt, spectrum, params_.delta, g);
    ++rounds_;
  }

  std::string SerializeState() const override {
    dense_state::Writer w(kKind, dim(), params_.tau, rounds_);
    w.Put(sketch_.sketch());
    w.Put(weights_);
    return std::move(w).Finish();
  }

  absl::Status RestoreState(std::string_view bytes) override {
    absl::StatusOr<dense_state::Reader> r =
        dense_state::Reader::Open(bytes, kKind, dim(), params_.tau);
    if (!r.ok()) return r.status();
    absl::StatusOr<Eigen::MatrixXd> s = r->Matrix("S", params_.tau, dim());
    if (!s.ok()) return s.status();
    if (absl::Status st = FdSketch::CheckRestorable(*s); !st.ok()) return st;
    absl::StatusOr<Eigen::VectorXd> weights = r->Vector("weights", dim());
    if (!weights.ok()) return weights.status();
    if (absl::Status st = r->Finish(); !st.ok()) return st;
    sketch_.set_sketch(*std::move(s));
    weights_ = *std::move(weights);
    rounds_ = r->rounds();
    return absl::OkStatus();
  }

  uint64_t StateBytes() const override {
    return sketch_.HeapBytes() + dense_state::HeapBytes(weights_);
  }

 private:
  const FdSonParams params_;
  FdSketch sketch_;  // S_t, of the rows sqrt(w_i) g_i
  Eigen::VectorXd weights_;
  uint64_t rounds_ = 0;
};

}  // namespace

absl::Status ValidateFdSonParams(const FdSonParams& params, int dim) {
  absl::Status s = dense_params::CheckPositive("eta", params.eta);
  s.Update(dense_params::CheckPositive("delta", params.delta));
  s.Update(dense_params::CheckInRange("weight_power", params.weight_power, 0, 1));
  s.Update(dense_params::CheckDim(dim));
  s.Update(dense_params::CheckTau(params.tau, dim));
  return s;
}

absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewFdSon(const FdSonParams& params, int dim) {
  if (absl::Status s = ValidateFdSonParams(params, dim); !s.ok()) return s;
  return std::make_unique<FdSon>(params, dim);
}

}  // namespace clickd
