#include "core/optim/dense/ada_fd.h"

#include <string>
#include <string_view>

#include "core/optim/dense/dense_fd_sketch.h"
#include "core/optim/dense/dense_params.h"
#include "core/optim/dense/dense_state_codec.h"

namespace clickd {
namespace {

class AdaFd final : public DenseOptimizer {
 public:
  AdaFd(const AdaFdParams& params, int dim, bool dual_averaging)
      : params_(params),
        dual_averaging_(dual_averaging),
        sketch_(params.tau, dim),
        gbar_(Eigen::VectorXd::Zero(dual_averaging ? dim : 0)),
        weights_(Eigen::VectorXd::Zero(dim)) {}

  int dim() const override { return static_cast<int>(weights_.size()); }
  const Eigen::VectorXd& weights() const override { return weights_; }
  uint64_t rounds() const override { return rounds_; }

  void Update(const Eigen::VectorXd& g) override {
    const FdSketch::Svd& svd = sketch_.Insert(g);  // steps 4-6
    // Step 7: -eta H_t^{-1} (.) with H_t^{-1} by Woodbury, D = Sigma'.
    if (dual_averaging_) {
      gbar_ += g;
      weights_ = -params_.eta * ApplyWoodburyInverse(svd.vt, svd.sigma, params_.delta, gbar_);
    } else {
      weights_ -= params_.eta * ApplyWoodburyInverse(svd.vt, svd.sigma, params_.delta, g);
    }
    ++rounds_;
  }

  std::string SerializeState() const override {
    dense_state::Writer w(kind(), dim(), params_.tau, rounds_);
    w.Put(sketch_.sketch());
    if (dual_averaging_) w.Put(gbar_);
    w.Put(weights_);
    return std::move(w).Finish();
  }

  absl::Status RestoreState(std::string_view bytes) override {
    absl::StatusOr<dense_state::Reader> r =
        dense_state::Reader::Open(bytes, kind(), dim(), params_.tau);
    if (!r.ok()) return r.status();
    absl::StatusOr<Eigen::MatrixXd> s = r->Matrix("S", params_.tau, dim());
    if (!s.ok()) return s.status();
    if (absl::Status st = FdSketch::CheckRestorable(*s); !st.ok()) return st;
    absl::StatusOr<Eigen::VectorXd> gbar = Eigen::VectorXd();
    if (dual_averaging_) gbar = r->Vector("gbar", dim());
    if (!gbar.ok()) return gbar.status();
    absl::StatusOr<Eigen::VectorXd> weights = r->Vector("weights", dim());
    if (!weights.ok()) return weights.status();
    if (absl::Status st = r->Finish(); !st.ok()) return st;
    sketch_.set_sketch(*std::move(s));
    gbar_ = *std::move(gbar);
    weights_ = *std::move(weights);
    rounds_ = r->rounds();
    return absl::OkStatus();
  }

  uint64_t StateBytes() const override {
    return sketch_.HeapBytes() + dense_state::HeapBytes(gbar_) + dense_state::HeapBytes(weights_);
  }

 private:
  std::string_view kind() const { return dual_averaging_ ? "ada_fd_da" : "ada_fd"; }

  const AdaFdParams params_;
  const bool dual_averaging_;
  FdSketch sketch_;       // S_t
  Eigen::VectorXd gbar_;  // sum of gradients; dual averaging only
  Eigen::VectorXd weights_;
  uint64_t rounds_ = 0;
};

absl::StatusOr<std::unique_ptr<DenseOptimizer>> Make(const AdaFdParams& params, int dim,
                                                     bool dual_averaging) {
  if (absl::Status s = ValidateAdaFdParams(params, dim); !s.ok()) return s;
  return std::make_unique<AdaFd>(params, dim, dual_averaging);
}

}  // namespace

absl::Status ValidateAdaFdParams(const AdaFdParams& params, int dim) {
  absl::Status s = dense_params::CheckPositive("eta", params.eta);
  s.Update(dense_params::CheckPositive("delta", params.delta));
  s.Update(dense_params::CheckDim(dim));
  s.Update(dense_params::CheckTau(params.tau, dim));
  return s;
}

absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewAdaFd(const AdaFdParams& params, int dim) {
  return Make(params, dim, /*dual_averaging=*/false);
}

absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewAdaFdDa(const AdaFdParams& params, int dim) {
  return Make(params, dim, /*dual_averaging=*/true);
}

}  // namespace clickd
