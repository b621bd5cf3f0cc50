#include "core/optim/dense/ada_diag.h"

#include <string>
#include <string_view>

#include "core/optim/dense/dense_params.h"
#include "core/optim/dense/dense_state_codec.h"

namespace clickd {
namespace {

class AdaDiag final : public DenseOptimizer {
 public:
  AdaDiag(const AdaDiagParams& params, int dim, bool dual_averaging)
      : params_(params),
        dual_averaging_(dual_averaging),
        sum_g2_(Eigen::VectorXd::Zero(dim)),
        gbar_(Eigen::VectorXd::Zero(dual_averaging ? dim : 0)),
        weights_(Eigen::VectorXd::Zero(dim)) {}

  int dim() const override { return static_cast<int>(weights_.size()); }
  const Eigen::VectorXd& weights() const override { return weights_; }
  uint64_t rounds() const override { return rounds_; }

  void Update(const Eigen::VectorXd& g) override {
    sum_g2_.array() += g.array().square();
    const Eigen::ArrayXd h = params_.delta + sum_g2_.array().sqrt();  // diag of H_t
    if (dual_averaging_) {
      gbar_ += g;
      weights_ = -params_.eta * (gbar_.array() / h).matrix();
    } else {
      weights_.array() -= params_.eta * g.array() / h;
    }
    ++rounds_;
  }

  std::string SerializeState() const override {
    dense_state::Writer w(kind(), dim(), 0, rounds_);
    w.Put(sum_g2_);
    if (dual_averaging_) w.Put(gbar_);
    w.Put(weights_);
    return std::move(w).Finish();
  }

  absl::Status RestoreState(std::string_view bytes) override {
    absl::StatusOr<dense_state::Reader> r = dense_state::Reader::Open(bytes, kind(), dim(), 0);
    if (!r.ok()) return r.status();
    absl::StatusOr<Eigen::VectorXd> sum_g2 = r->Vector("sum_g2", dim());
    if (!sum_g2.ok()) return sum_g2.status();
    absl::StatusOr<Eigen::VectorXd> gbar = Eigen::VectorXd();
    if (dual_averaging_) gbar = r->Vector("gbar", dim());
    if (!gbar.ok()) return gbar.status();
    absl::StatusOr<Eigen::VectorXd> weights = r->Vector("weights", dim());
    if (!weights.ok()) return weights.status();
    if (absl::Status s = r->Finish(); !s.ok()) return s;
    sum_g2_ = *std::move(sum_g2);
    gbar_ = *std::move(gbar);
    weights_ = *std::move(weights);
    rounds_ = r->rounds();
    return absl::OkStatus();
  }

  uint64_t StateBytes() const override {
    return dense_state::HeapBytes(sum_g2_) + dense_state::HeapBytes(gbar_) +
           dense_state::HeapBytes(weights_);
  }

 private:
  std::string_view kind() const { return dual_averaging_ ? "ada_diag_da" : "ada_diag"; }

  const AdaDiagParams params_;
  const bool dual_averaging_;
  Eigen::VectorXd sum_g2_;  // diag(G_t)
  Eigen::VectorXd gbar_;    // sum of gradients; dual averaging only
  Eigen::VectorXd weights_;
  uint64_t rounds_ = 0;
};

absl::StatusOr<std::unique_ptr<DenseOptimizer>> Make(const AdaDiagParams& params, int dim,
                                                     bool dual_averaging) {
  if (absl::Status s = ValidateAdaDiagParams(params, dim); !s.ok()) return s;
  return std::make_unique<AdaDiag>(params, dim, dual_averaging);
}

}  // namespace

absl::Status ValidateAdaDiagParams(const AdaDiagParams& params, int dim) {
  absl::Status s = dense_params::CheckPositive("eta", params.eta);
  s.Update(dense_params::CheckPositive("delta", params.delta));
  s.Update(dense_params::CheckDim(dim));
  return s;
}

absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewAdaDiag(const AdaDiagParams& params, int dim) {
  return Make(params, dim, /*dual_averaging=*/false);
}

absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewAdaDiagDa(const AdaDiagParams& params, int dim) {
  return Make(params, dim, /*dual_averaging=*/true);
}

}  // namespace clickd
