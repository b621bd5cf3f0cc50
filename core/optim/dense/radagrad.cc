#include "core/optim/dense/radagrad.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/optim/dense/dense_params.h"
#include "core/optim/dense/dense_state_codec.h"

namespace clickd {
namespace {

constexpr std::string_view kKind = "radagrad";

// The seed as a 2 x 1 block of doubles, low and high 32 bits: each half is
// an integer below 2^32, exact in a double.
Eigen::VectorXd SeedBlock(uint64_t seed) {
  Eigen::VectorXd block(2);
  block << static_cast<double>(seed & 0xffffffffu), static_cast<double>(seed >> 32);
  return block;
}

// The inverse of SeedBlock; DataLoss unless both halves are integers in
// [0, 2^32).
absl::StatusOr<uint64_t> SeedFromBlock(const Eigen::VectorXd& block) {
  constexpr double kTwo32 = 4294967296.0;
  for (double half : {block(0), block(1)}) {
    if (!(half >= 0 && half < kTwo32 && half == std::floor(half))) {
      return absl::DataLossError(absl::StrCat("seed half ", half, " is not a 32-bit integer"));
    }
  }
  return static_cast<uint64_t>(block(1)) << 32 | static_cast<uint64_t>(block(0));
}

}  // namespace

absl::Status ValidateRadagradParams(const RadagradParams& params, int dim) {
  absl::Status s = dense_params::CheckPositive("eta", params.eta);
  s.Update(dense_params::CheckPositive("delta", params.delta));
  s.Update(dense_params::CheckDim(dim));
  if (dim > Srht::kMaxDim) {
    s.Update(absl::InvalidArgumentError(
        absl::StrCat("dim is ", dim, "; must be <= ", Srht::kMaxDim,
                     " (the Hadamard transform pads it to a power of two)")));
  }
  s.Update(dense_params::CheckTau(params.tau, dim));
  return s;
}

absl::StatusOr<std::unique_ptr<Radagrad>> Radagrad::Create(const RadagradParams& params, int dim) {
  if (absl::Status s = ValidateRadagradParams(params, dim); !s.ok()) return s;
  return std::unique_ptr<Radagrad>(new Radagrad(params, dim));
}

Radagrad::Radagrad(const RadagradParams& params, int dim)
    : params_(params),
      projection_(dim, params.tau, params.seed),
      g_tilde_(Eigen::MatrixXd::Zero(dim, params.tau)),
      weights_(Eigen::VectorXd::Zero(dim)),
      qr_(dim, params.tau),
      q_(dim, params.tau),
      b_(params.tau, params.tau),
      svd_(params.tau, params.tau, Eigen::ComputeFullV),
      v_(dim, params.tau) {}

void Radagrad::Update(const Eigen::VectorXd& g) {
  const Eigen::VectorXd g_proj = projection_.Apply(g);  // g~_t = Pi g_t
  g_tilde_.noalias() += g * g_proj.transpose();
  qr_.compute(g_tilde_);
  q_.setIdentity(dim(), params_.tau);
  q_.applyOnTheLeft(qr_.householderQ());  // the first tau columns of Q
  b_.noalias() = g_tilde_.transpose() * q_;
  svd_.compute(b_, Eigen::ComputeFullV);
  v_.noalias() = q_ * svd_.matrixV();
  // Singular values are >= 0, so sqrt(.) + delta >= delta > 0: no division
  // by zero while G~_t is rank-deficient.
  const Eigen::VectorXd vt_g = v_.transpose() * g;
  const Eigen::VectorXd scaled =
      (vt_g.array() / (svd_.singularValues().array().sqrt() + params_.delta)).matrix();
  const Eigen::VectorXd gamma = params_.eta * (g - v_ * vt_g);
  weights_.noalias() -= params_.eta * (v_ * scaled);
  weights_ -= gamma;
  ++rounds_;
}

std::string Radagrad::SerializeState() const {
  dense_state::Writer w(kKind, dim(), params_.tau, rounds_);
  w.Put(SeedBlock(params_.seed));
  w.Put(g_tilde_);
  w.Put(weights_);
  return std::move(w).Finish();
}

absl::Status Radagrad::RestoreState(std::string_view bytes) {
  absl::StatusOr<dense_state::Reader> r =
      dense_state::Reader::Open(bytes, kKind, dim(), params_.tau);
  if (!r.ok()) return r.status();
  absl::StatusOr<Eigen::VectorXd> seed_block = r->Vector("seed", 2);
  if (!seed_block.ok()) return seed_block.status();
  absl::StatusOr<uint64_t> seed = SeedFromBlock(*seed_block);
  if (!seed.ok()) return seed.status();
  if (*seed != params_.seed) {
    return absl::InvalidArgumentError(
        absl::StrCat("seed is ", *seed, " in the bytes, ", params_.seed, " here: Pi would differ"));
  }
  absl::StatusOr<Eigen::MatrixXd> g_tilde = r->Matrix("G~", dim(), params_.tau);
  if (!g_tilde.ok()) return g_tilde.status();
  absl::StatusOr<Eigen::VectorXd> weights = r->Vector("weights", dim());
  if (!weights.ok()) return weights.status();
  if (absl::Status st = r->Finish(); !st.ok()) return st;
  g_tilde_ = *std::move(g_tilde);
  weights_ = *std::move(weights);
  rounds_ = r->rounds();
  return absl::OkStatus();
}

uint64_t Radagrad::StateBytes() const {
  // G~, beta and the d x tau buffers (QR factor, Q, V); the tau x tau ones
  // and the O(d') projection are small beside them. The QR's size is read
  // from rows() and cols(): matrixQR() asserts before the first Update.
  const uint64_t qr_bytes = static_cast<uint64_t>(qr_.rows() * qr_.cols()) * sizeof(double);
  return dense_state::HeapBytes(g_tilde_) + dense_state::HeapBytes(weights_) + qr_bytes +
         dense_state::HeapBytes(q_) + dense_state::HeapBytes(v_);
}

}  // namespace clickd
