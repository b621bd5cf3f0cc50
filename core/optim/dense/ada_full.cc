#include "core/optim/dense/ada_full.h"

#include <string>
#include <string_view>

#include "Eigen/Eigenvalues"
#include "core/optim/dense/dense_params.h"
#include "core/optim/dense/dense_state_codec.h"

namespace clickd {
namespace {

class AdaFull final : public DenseOptimizer {
 public:
  AdaFull(const AdaFullParams& params, int dim, bool dual_averaging)
      : params_(params),
        dual_averaging_(dual_averaging),
        g_outer_(Eigen::MatrixXd::Zero(dim, dim)),
        gbar_(Eigen::VectorXd::Zero(dual_averaging ? dim : 0)),
        weights_(Eigen::VectorXd::Zero(dim)),
        eig_(dim) {}

  int dim() const override { return static_cast<int>(weights_.size()); }
  const Eigen::VectorXd& weights() const override { return weights_; }
  uint64_t rounds() const override { return rounds_; }

  void Update(const Eigen::VectorXd& g) override {
    g_outer_.noalias() += g * g.transpose();
    eig_.compute(g_outer_);
    if (dual_averaging_) {
      gbar_ += g;
      weights_ = -params_.eta *
                 ApplyAdaFullInverse(eig_.eigenvectors(), eig_.eigenvalues(), params_.delta, gbar_);
    } else {
      weights_ -= params_.eta *
                  ApplyAdaFullInverse(eig_.eigenvectors(), eig_.eigenvalues(), params_.delta, g);
    }
    ++rounds_;
  }

  std::string SerializeState() const override {
    dense_state::Writer w(kind(), dim(), 0, rounds_);
    w.Put(g_outer_);
    if (dual_averaging_) w.Put(gbar_);
    w.Put(weights_);
    return std::move(w).Finish();
  }

  absl::Status RestoreState(std::string_view bytes) override {
    absl::StatusOr<dense_state::Reader> r = dense_state::Reader::Open(bytes, kind(), dim(), 0);
    if (!r.ok()) return r.status();
    absl::StatusOr<Eigen::MatrixXd> g_outer = r->Matrix("G", dim(), dim());
    if (!g_outer.ok()) return g_outer.status();
    absl::StatusOr<Eigen::VectorXd> gbar = Eigen::VectorXd();
    if (dual_averaging_) gbar = r->Vector("gbar", dim());
    if (!gbar.ok()) return gbar.status();
    absl::StatusOr<Eigen::VectorXd> weights = r->Vector("weights", dim());
    if (!weights.ok()) return weights.status();
    if (absl::Status s = r->Finish(); !s.ok()) return s;
    g_outer_ = *std::move(g_outer);
    gbar_ = *std::move(gbar);
    weights_ = *std::move(weights);
    rounds_ = r->rounds();
    return absl::OkStatus();
  }

  // G_t plus the eigensolver's d x d eigenvectors (kept between steps to
  // avoid reallocating); its O(d) workspace is not counted.
  uint64_t StateBytes() const override {
    return dense_state::HeapBytes(g_outer_) + dense_state::HeapBytes(gbar_) +
           dense_state::HeapBytes(weights_) +
           uint64_t{sizeof(double)} * static_cast<uint64_t>(dim()) * dim();
  }

 private:
  std::string_view kind() const { return dual_averaging_ ? "ada_full_da" : "ada_full"; }

  const AdaFullParams params_;
  const bool dual_averaging_;
  Eigen::MatrixXd g_outer_;  // G_t
  Eigen::VectorXd gbar_;     // sum of gradients; dual averaging only
  Eigen::VectorXd weights_;
  uint64_t rounds_ = 0;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig_;  // scratch, not state
};

absl::StatusOr<std::unique_ptr<DenseOptimizer>> Make(const AdaFullParams& params, int dim,
                                                     bool dual_averaging) {
  if (absl::Status s = ValidateAdaFullParams(params, dim); !s.ok()) return s;
  return std::make_unique<AdaFull>(params, dim, dual_averaging);
}

}  // namespace

absl::Status ValidateAdaFullParams(const AdaFullParams& params, int dim) {
  absl::Status s = dense_params::CheckPositive("eta", params.eta);
  s.Update(dense_params::CheckPositive("delta", params.delta));
  s.Update(dense_params::CheckDim(dim));
  return s;
}

absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewAdaFull(const AdaFullParams& params, int dim) {
  return Make(params, dim, /*dual_averaging=*/false);
}

absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewAdaFullDa(const AdaFullParams& params, int dim) {
  return Make(params, dim, /*dual_averaging=*/true);
}

Eigen::MatrixXd ApplyAdaFullInverse(const Eigen::MatrixXd& q, const Eigen::VectorXd& lambda,
                                    double delta, const Eigen::MatrixXd& v) {
  const Eigen::VectorXd inv_h = (delta + lambda.array().max(0.0).sqrt()).inverse().matrix();
  Eigen::MatrixXd coords = q.transpose() * v;  // v in G's eigenbasis
  return q * (inv_h.asDiagonal() * coords);
}

}  // namespace clickd
