// ADA-FD (seed 002 Algorithms 1 and 2) against an explicit d x d
// construction: the sketch is carried as the covariance M = S^T S (the FD
// step is a function of it alone), shrunk through the eigendecomposition of
// M, and H_t = delta I + (S_t^T S_t)^{1/2} is assembled and solved by
// Cholesky. No tau x d matrix, Gram trick or Woodbury formula on this side.
#include "core/optim/dense/ada_fd.h"

#include <algorithm>
#include <vector>

#include "Eigen/Cholesky"
#include "Eigen/Eigenvalues"
#include "core/optim/dense/ada_full.h"
#include "core/optim/dense/dense_fd_sketch.h"
#include "core/optim/dense/dense_state_codec.h"
#include "core/optim/dense/dense_test_util.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

using dense_test::MaxRelativeGap;
using dense_test::RandomGradients;

// The optimizer finds the sketch's SVD from its tau x tau Gram matrix, the
// reference from the d x d covariance; both lose digits on small singular
// values (sqrt of a difference of eigenvalues).
constexpr double kTol = 1e-9;

// The FD step on M = S_{t-1}^T S_{t-1} (whose rank is at most tau - 1):
// M + g g^T is the covariance after step 4; its top tau eigenpairs are
// (Sigma^2, V); sigma_t is the tau-th; returns S_t^T S_t and, through
// `root`, (S_t^T S_t)^{1/2} = V Sigma' V^T. Eigenvalues below 1e-12 of the
// largest count as zero, as in FdSketch.
Eigen::MatrixXd FdStep(const Eigen::MatrixXd& m, const Eigen::VectorXd& g, int tau,
                       Eigen::MatrixXd* root) {
  const Eigen::Index d = m.rows();
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(m + g * g.transpose());
  const Eigen::VectorXd lambda = es.eigenvalues().reverse();  // descending
  const Eigen::MatrixXd v = es.eigenvectors().rowwise().reverse();
  const double floor = 1e-12 * std::max(lambda(0), 0.0);
  const double sigma_t = lambda(tau - 1) <= floor ? 0.0 : lambda(tau - 1);
  Eigen::MatrixXd next = Eigen::MatrixXd::Zero(d, d);
  root->setZero(d, d);
  for (int i = 0; i < tau - 1; ++i) {
    if (lambda(i) <= floor) continue;
    const double shrunk = std::max(lambda(i) - sigma_t, 0.0);
    next += shrunk * v.col(i) * v.col(i).transpose();
    *root += std::sqrt(shrunk) * v.col(i) * v.col(i).transpose();
  }
  return next;
}

struct Trajectories {
  std::vector<Eigen::VectorXd> mirror_descent, dual_averaging;
};

// Both forms at once; they share the sketch, which does not depend on the
// weights.
Trajectories Reference(const AdaFdParams& p, const std::vector<Eigen::VectorXd>& grads) {
  const int d = static_cast<int>(grads[0].size());
  Eigen::MatrixXd m = Eigen::MatrixXd::Zero(d, d), root;
  Eigen::VectorXd gbar = Eigen::VectorXd::Zero(d), beta = Eigen::VectorXd::Zero(d);
  Trajectories out;
  for (const Eigen::VectorXd& g : grads) {
    m = FdStep(m, g, p.tau, &root);
    gbar += g;
    const Eigen::LLT<Eigen::MatrixXd> h(p.delta * Eigen::MatrixXd::Identity(d, d) + root);
    beta -= p.eta * h.solve(g);  // eq. (7)
    out.mirror_descent.push_back(beta);
    out.dual_averaging.push_back(-p.eta * h.solve(gbar));  // eq. (6)
  }
  return out;
}

TEST(AdaFdTest, DefaultsArePinned) {
  AdaFdParams p;
  EXPECT_EQ(p.eta, 0.1);
  EXPECT_EQ(p.delta, 1.0);
  EXPECT_EQ(p.tau, 10);
}

TEST(AdaFdTest, ValidationNamesFieldAndLimit) {
  EXPECT_TRUE(ValidateAdaFdParams({.tau = 5}, 5).ok());
  absl::Status s = ValidateAdaFdParams({.tau = 0}, 5);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tau is 0; must be in [1, dim] (dim is 5)"), std::string::npos) << s;
  s = ValidateAdaFdParams({.tau = 6}, 5);
  EXPECT_NE(s.message().find("tau is 6; must be in [1, dim]"), std::string::npos) << s;
  s = ValidateAdaFdParams({.eta = -1, .tau = 2}, 5);
  EXPECT_NE(s.message().find("eta is -1"), std::string::npos) << s;
  EXPECT_FALSE(NewAdaFd({}, 9).ok());  // default tau 10 > dim 9
  EXPECT_TRUE(NewAdaFdDa({}, 10).ok());
}

TEST(AdaFdTest, FirstStepByHand) {
  const AdaFdParams p{.eta = 0.5, .delta = 2.0, .tau = 2};
  Eigen::VectorXd g(3);
  g << 3, 0, -4;
  for (bool da : {false, true}) {
    // tau = 2: sigma_1 = 0, Sigma' = |g|, H_1 g = (delta + |g|) g.
    auto opt = *(da ? NewAdaFdDa(p, 3) : NewAdaFd(p, 3));
    opt->Update(g);
    EXPECT_LT((opt->weights() - (-0.5 * g / 7.0)).norm(), 1e-14);
    // tau = 1: the shrink removes g entirely, H_1 = delta I.
    AdaFdParams p1 = p;
    p1.tau = 1;
    auto one = *(da ? NewAdaFdDa(p1, 3) : NewAdaFd(p1, 3));
    one->Update(g);
    EXPECT_LT((one->weights() - (-0.5 * g / 2.0)).norm(), 1e-14);
  }
}

TEST(AdaFdTest, MatchesExplicitSketchReference) {
  for (int d : {6, 30}) {
    for (int tau : {1, 2, 5, 10}) {
      if (tau > d) continue;
      const auto grads = RandomGradients(150, d, d, 300 + 10 * d + tau);
      for (AdaFdParams p : {AdaFdParams{}, AdaFdParams{.eta = 3, .delta = 1e-2}}) {
        p.tau = tau;
        auto md = *NewAdaFd(p, d);
        auto da = *NewAdaFdDa(p, d);
        const Trajectories want = Reference(p, grads);
        EXPECT_LT(MaxRelativeGap(dense_test::Run(*md, grads), want.mirror_descent), kTol)
            << "d=" << d << " tau=" << tau << " delta=" << p.delta;
        EXPECT_LT(MaxRelativeGap(dense_test::Run(*da, grads), want.dual_averaging), kTol)
            << "d=" << d << " tau=" << tau << " delta=" << p.delta;
      }
    }
  }
}

// Seed 002 section 3.2: when rank(G_T) = r, tau = r + 1 gives Delta_T = 0;
// then S_t^T S_t = G_t every round and ADA-FD is ADA-FULL. With tau = r the
// sketch must drop a direction and the two part.
TEST(AdaFdTest, ExactSketchIsAdaFull) {
  const int d = 30, r = 3;
  const auto grads = RandomGradients(300, d, r, 77);
  for (bool da : {false, true}) {
    const AdaFullParams fp{.eta = 0.7, .delta = 0.05};
    auto full = *(da ? NewAdaFullDa(fp, d) : NewAdaFull(fp, d));
    const auto want = dense_test::Run(*full, grads);
    for (int tau : {r + 1, r + 5}) {
      const AdaFdParams p{.eta = 0.7, .delta = 0.05, .tau = tau};
      auto fd = *(da ? NewAdaFdDa(p, d) : NewAdaFd(p, d));
      EXPECT_LT(MaxRelativeGap(dense_test::Run(*fd, grads), want), 1e-8) << "tau=" << tau;
    }
    const AdaFdParams short_sketch{.eta = 0.7, .delta = 0.05, .tau = r};
    auto fd = *(da ? NewAdaFdDa(short_sketch, d) : NewAdaFd(short_sketch, d));
    EXPECT_GT(MaxRelativeGap(dense_test::Run(*fd, grads), want), 1e-3);
  }
}

// The frequent-directions guarantee seed 002 quotes in section 3.2: with
// C_T the stacked gradients and Delta_T = sum_t sigma_t,
// 0 <= C^T C - S^T S <= Delta_T I and Delta_T <= ||C - C_k||_F^2 / (tau - k).
TEST(AdaFdTest, SketchMeetsFrequentDirectionsBound) {
  const int d = 25, tau = 6, n = 250;
  const auto grads = RandomGradients(n, d, d, 5);
  FdSketch sketch(tau, d);
  Eigen::MatrixXd cov = Eigen::MatrixXd::Zero(d, d);
  double delta_t = 0;
  for (const auto& g : grads) {
    cov += g * g.transpose();
    delta_t += sketch.Insert(g).shrink;
    EXPECT_TRUE(sketch.sketch().row(tau - 1).isZero(0));
  }
  const Eigen::MatrixXd s = sketch.sketch();
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> err(cov - s.transpose() * s);
  const double scale = cov.norm();
  EXPECT_GT(err.eigenvalues().minCoeff(), -1e-10 * scale);
  EXPECT_LE(err.eigenvalues().maxCoeff(), delta_t * (1 + 1e-10));
  const Eigen::VectorXd lambda = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(cov)
                                     .eigenvalues()
                                     .reverse();  // squared singular values of C
  for (int k = 0; k < tau; ++k) {
    const double tail = lambda.tail(d - k).sum();  // ||C - C_k||_F^2
    EXPECT_LE(delta_t, tail / (tau - k) * (1 + 1e-10)) << "k=" << k;
  }
  EXPECT_GT(delta_t, 0);
}

TEST(AdaFdTest, StateRoundTripsBitIdentically) {
  for (bool da : {false, true}) {
    dense_test::ExpectRoundTrip(
        [da] {
          const AdaFdParams p{.tau = 4};
          return da ? NewAdaFdDa(p, 12) : NewAdaFd(p, 12);
        },
        40, 30);
  }
}

TEST(AdaFdTest, RestoreRejectsOtherBytesAndKeepsState) {
  const AdaFdParams p{.tau = 4};
  const AdaFdParams other_tau{.tau = 3};
  dense_test::ExpectRejects([&] { return NewAdaFd(p, 8); }, (*NewAdaFdDa(p, 8))->SerializeState(),
                            (*NewAdaFd(other_tau, 8))->SerializeState());
  dense_test::ExpectRejects([&] { return NewAdaFdDa(p, 8); },
                            (*NewAdaFullDa({}, 8))->SerializeState(),
                            (*NewAdaFdDa(p, 9))->SerializeState());
  // Intact bytes whose sketch could not come from Algorithm 2: the last row
  // must be zero between rounds.
  auto opt = *NewAdaFd(p, 8);
  const std::string before = opt->SerializeState();
  dense_state::Writer w("ada_fd", 8, 4, 3);
  w.Put(Eigen::MatrixXd::Ones(4, 8).eval());
  w.Put(Eigen::VectorXd::Zero(8).eval());
  const absl::Status s = opt->RestoreState(std::move(w).Finish());
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_EQ(opt->SerializeState(), before);
  const absl::Status tau_error = opt->RestoreState((*NewAdaFd(other_tau, 8))->SerializeState());
  EXPECT_NE(tau_error.message().find("tau is 3 in the bytes, 4 here"), std::string::npos)
      << tau_error;
}

TEST(AdaFdTest, StateBytesIsOrderTauTimesDim) {
  for (int d : {100, 1000}) {
    for (int tau : {2, 10}) {
      const uint64_t bytes = (*NewAdaFdDa({.tau = tau}, d))->StateBytes();
      // S and V^T (tau x d each), gbar and beta (d each), tau x tau buffers.
      EXPECT_EQ(bytes, 8u * (2 * tau * d + 2 * d + tau + 3 * tau * tau)) << d << " " << tau;
    }
  }
}

}  // namespace
}  // namespace clickd
