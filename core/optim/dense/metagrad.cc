#include "core/optim/dense/metagrad.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "Eigen/Eigenvalues"
#include "absl/strings/str_cat.h"
#include "core/base/coding.h"
#include "core/optim/metagrad_grid.h"

namespace clickd {
namespace {

// State layout (little-endian): magic, version, dim, K as uint32; D, G as
// double; rounds as uint64; then doubles: w (d), sum g g^T (d*d, column
// major), and per slave its cumulative surrogate loss (1), w^eta (d) and
// Sigma (d*d, column major).
constexpr uint32_t kMagic = 0x4452474d;  // "MGRD"
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 4 * 4 + 8 * 3;

absl::Status RequirePositive(std::string_view field, double value) {
  if (std::isfinite(value) && value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("metagrad.", std::string(field), " is ", value, "; must be finite and > 0"));
}

using EigenSolver = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>;

// Projects `w` onto the ball ||u|| <= radius in the norm of
// A = I/D^2 + 2 eta^2 M, with M = Q diag(mu) Q^T given by `eig`. The KKT
// conditions give (A + lambda I) u = A w with lambda >= 0 and ||u|| = radius;
// in M's eigenbasis, with a_j = 1/D^2 + 2 eta^2 mu_j and b = diag(a) Q^T w,
// u(lambda) = Q (b_j / (a_j + lambda)). phi(lambda) = 1/||u|| - 1/radius is
// concave and increasing (the trust-region secular equation, Moré & Sorensen
// 1983), so Newton's method from lambda = 0, where phi < 0, climbs
// monotonically to the root.
Eigen::VectorXd ProjectToBall(const Eigen::VectorXd& w, double inv_d2, double eta,
                              const EigenSolver& eig, double radius) {
  const Eigen::ArrayXd a =
      inv_d2 + 2.0 * eta * eta * eig.eigenvalues().array().max(0.0);  // clamp rounding
  const Eigen::ArrayXd b = a * (eig.eigenvectors().transpose() * w).array();
  double lambda = 0;
  for (int iter = 0; iter < 100; ++iter) {
    const Eigen::ArrayXd u = b / (a + lambda);
    const double norm = std::sqrt(u.square().sum());
    if (norm <= radius) break;
    const double slope = (u.square() / (a + lambda)).sum();  // = -||u|| d||u||/dlambda
    const double next = lambda + (1.0 / radius - 1.0 / norm) * norm * norm * norm / slope;
    if (!(next > lambda)) break;
    lambda = next;
  }
  Eigen::VectorXd u = eig.eigenvectors() * (b / (a + lambda)).matrix();
  const double norm = u.norm();
  if (norm > radius) u *= radius / norm;  // the last ulps of the root
  return u;
}

class MetaGrad final : public DenseOptimizer {
 public:
  MetaGrad(const MetaGradParams& params, int dim)
      : diameter_(params.diameter),
        gradient_bound_(params.gradient_bound),
        dim_(dim),
        w_(Eigen::VectorXd::Zero(dim)),
        gram_(Eigen::MatrixXd::Zero(dim, dim)),
        v_(dim),
        u_(dim) {
    const int k = MetaGradNumSlaves(params);
    for (int i = 0; i < k; ++i) {
      eta_.push_back(MetaGradEta(i, diameter_, gradient_bound_));
      log_prior_.push_back(MetaGradLogPrior(i, k));
      slaves_.push_back({0.0, Eigen::VectorXd::Zero(dim),
                         Eigen::MatrixXd::Identity(dim, dim) * (diameter_ * diameter_)});
    }
  }

  int dim() const override { return dim_; }
  const Eigen::VectorXd& weights() const override { return w_; }
  uint64_t rounds() const override { return rounds_; }

  void Update(const Eigen::VectorXd& g) override {
    assert(g.size() == dim_);
    ++rounds_;
    gram_.noalias() += g * g.transpose();
    outside_.clear();
    for (size_t i = 0; i < slaves_.size(); ++i) {
      if (!StepSlave(eta_[i], g, slaves_[i])) outside_.push_back(static_cast<int>(i));
    }
    if (!outside_.empty()) {
      const EigenSolver eig(gram_);
      const double inv_d2 = 1.0 / (diameter_ * diameter_);
      for (int i : outside_) {
        slaves_[i].w = ProjectToBall(slaves_[i].w, inv_d2, eta_[i], eig, 0.5 * diameter_);
      }
    }
    RecomputeMaster();
  }

  std::string SerializeState() const override;
  absl::Status RestoreState(std::string_view bytes) override;

  uint64_t StateBytes() const override {
    const uint64_t d = dim_;
    return sizeof(uint64_t) + sizeof(double) * (d + d * d + slaves_.size() * (1 + d + d * d));
  }

 private:
  struct Slave {
    double loss;  // sum of surrogate losses, minus the smallest slave's
    Eigen::VectorXd w;
    Eigen::MatrixXd sigma;
  };

  // One slave round given the master's w_t (still in w_) and g_t. Returns
  // false if the unprojected step left the ball (s.w then holds w~).
  bool StepSlave(double eta, const Eigen::VectorXd& g, Slave& s) {
    const double r = (s.w - w_).dot(g);
    s.loss += MetaGradSurrogateLoss(eta, r);
    // Sherman-Morrison for Sigma_{t+1} = (Sigma_t^-1 + 2 eta^2 g g^T)^-1:
    // with v = Sigma_t g and c = 1 + 2 eta^2 g^T v, Sigma_{t+1} g = v / c and
    // Sigma_{t+1} = Sigma_t - (2 eta^2 / c) v v^T, subtracted as u u^T with
    // u = v eta sqrt(2 / c) so that Sigma stays exactly symmetric.
    v_.noalias() = s.sigma * g;
    double c = 1.0 + 2.0 * eta * eta * g.dot(v_);
    if (c > 0) {
      u_ = v_ * (eta * std::sqrt(2.0 / c));
      s.sigma.noalias() -= u_ * u_.transpose();
    } else {
      // Sigma is positive definite, so c >= 1; only rounding after huge
      // gradients (|g| ~ 1e21: core/optim/numeric_bounds.h) makes c <= 0.
      // Then Sigma keeps its value rather than turning sqrt(2 / c) into NaN;
      // every step that was finite before takes the branch above, unchanged.
      c = 1;
    }
    s.w -= (eta * MetaGradGradientScale(eta, r) / c) * v_;
    const double radius = 0.5 * diameter_;
    return s.w.squaredNorm() <= radius * radius;
  }

  // Shifts the slaves' losses so the smallest is 0 (only differences
  // matter), then sets w_ to the tilted average of the slaves' points.
  void RecomputeMaster() {
    double min_loss = std::numeric_limits<double>::infinity();
    for (const Slave& s : slaves_) min_loss = std::min(min_loss, s.loss);
    double max_log_weight = -std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < slaves_.size(); ++i) {
      slaves_[i].loss -= min_loss;
      max_log_weight = std::max(max_log_weight, log_prior_[i] - slaves_[i].loss);
    }
    w_.setZero();
    double total = 0;
    for (size_t i = 0; i < slaves_.size(); ++i) {
      const double tilted = std::exp(log_prior_[i] - slaves_[i].loss - max_log_weight) * eta_[i];
      w_ += tilted * slaves_[i].w;
      total += tilted;
    }
    w_ /= total;
  }

  const double diameter_;
  const double gradient_bound_;
  const int dim_;
  std::vector<double> eta_;
  std::vector<double> log_prior_;
  uint64_t rounds_ = 0;
  Eigen::VectorXd w_;
  Eigen::MatrixXd gram_;  // sum_{s<=t} g_s g_s^T, for the projection
  std::vector<Slave> slaves_;
  // Scratch, so that a round without projection allocates nothing.
  Eigen::VectorXd v_, u_;
  std::vector<int> outside_;
};

void PutDoubles(std::string* out, const double* data, Eigen::Index n) {
  for (Eigen::Index i = 0; i < n; ++i) coding::PutDouble(out, data[i]);
}

// Reads n doubles into data; false if one is not finite.
bool GetFiniteDoubles(coding::Decoder& in, double* data, Eigen::Index n) {
  for (Eigen::Index i = 0; i < n; ++i) {
    if (!in.GetDouble(&data[i]) || !std::isfinite(data[i])) return false;
  }
  return true;
}

std::string MetaGrad::SerializeState() const {
  std::string out;
  out.reserve(kHeaderBytes + StateBytes());
  coding::PutFixed32(&out, kMagic);
  coding::PutFixed32(&out, kVersion);
  coding::PutFixed32(&out, static_cast<uint32_t>(dim_));
  coding::PutFixed32(&out, static_cast<uint32_t>(slaves_.size()));
  coding::PutDouble(&out, diameter_);
  coding::PutDouble(&out, gradient_bound_);
  coding::PutFixed64(&out, rounds_);
  PutDoubles(&out, w_.data(), w_.size());
  PutDoubles(&out, gram_.data(), gram_.size());
  for (const Slave& s : slaves_) {
    coding::PutDouble(&out, s.loss);
    PutDoubles(&out, s.w.data(), s.w.size());
    PutDoubles(&out, s.sigma.data(), s.sigma.size());
  }
  return out;
}

absl::Status MetaGrad::RestoreState(std::string_view bytes) {
  coding::Decoder in(bytes);
  uint32_t magic = 0, version = 0, dim = 0, k = 0;
  double diameter = 0, gradient_bound = 0;
  uint64_t rounds = 0;
  if (bytes.size() < kHeaderBytes) {
    return absl::DataLossError(absl::StrCat("MetaGrad state: ", bytes.size(),
                                            " bytes, shorter than its ", kHeaderBytes,
                                            "-byte header"));
  }
  if (!in.GetFixed32(&magic) || magic != kMagic) {
    return absl::DataLossError("MetaGrad state: bad magic; not the state of a MetaGrad learner");
  }
  if (!in.GetFixed32(&version) || version != kVersion) {
    return absl::DataLossError(
        absl::StrCat("MetaGrad state: version ", version, ", expected ", kVersion));
  }
  if (!in.GetFixed32(&dim) || !in.GetFixed32(&k) || !in.GetDouble(&diameter) ||
      !in.GetDouble(&gradient_bound) || !in.GetFixed64(&rounds)) {
    return absl::DataLossError("MetaGrad state: truncated header");
  }
  if (dim != static_cast<uint32_t>(dim_) || k != slaves_.size() || diameter != diameter_ ||
      gradient_bound != gradient_bound_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "MetaGrad state is for dim ", dim, ", ", k, " slaves, diameter ", diameter,
        ", gradient_bound ", gradient_bound, "; this optimizer has dim ", dim_, ", ",
        slaves_.size(), " slaves, diameter ", diameter_, ", gradient_bound ", gradient_bound_));
  }
  const size_t expected = kHeaderBytes + StateBytes() - sizeof(uint64_t);
  if (bytes.size() != expected) {
    return absl::DataLossError(
        absl::StrCat("MetaGrad state: ", bytes.size(), " bytes, expected ", expected));
  }
  Eigen::VectorXd w(dim_);
  Eigen::MatrixXd gram(dim_, dim_);
  std::vector<Slave> slaves(slaves_.size(),
                            {0.0, Eigen::VectorXd(dim_), Eigen::MatrixXd(dim_, dim_)});
  bool finite =
      GetFiniteDoubles(in, w.data(), w.size()) && GetFiniteDoubles(in, gram.data(), gram.size());
  for (Slave& s : slaves) {
    finite = finite && GetFiniteDoubles(in, &s.loss, 1) &&
             GetFiniteDoubles(in, s.w.data(), s.w.size()) &&
             GetFiniteDoubles(in, s.sigma.data(), s.sigma.size());
  }
  if (!finite) return absl::DataLossError("MetaGrad state: a value is not finite");
  rounds_ = rounds;
  w_ = std::move(w);
  gram_ = std::move(gram);
  slaves_ = std::move(slaves);
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateMetaGradParams(const MetaGradParams& params) {
  absl::Status status = RequirePositive("diameter", params.diameter);
  status.Update(RequirePositive("gradient_bound", params.gradient_bound));
  if (params.num_slaves < 0 || params.num_slaves > kMetaGradMaxSlaves) {
    status.Update(absl::InvalidArgumentError(
        absl::StrCat("metagrad.num_slaves is ", params.num_slaves, "; must be in [0, ",
                     kMetaGradMaxSlaves, "] (0: ceil(log2(horizon) / 2) + 1)")));
  }
  if (params.num_slaves == 0 && params.horizon < 1) {
    status.Update(
        absl::InvalidArgumentError("metagrad.horizon is 0; must be >= 1 when num_slaves is 0"));
  }
  return status;
}

int MetaGradNumSlaves(const MetaGradParams& params) {
  return params.num_slaves > 0 ? params.num_slaves : MetaGradSlavesForHorizon(params.horizon);
}

std::unique_ptr<DenseOptimizer> NewMetaGrad(const MetaGradParams& params, int dim) {
  if (dim < 1 || !ValidateMetaGradParams(params).ok()) return nullptr;
  return std::make_unique<MetaGrad>(params, dim);
}

}  // namespace clickd
