// Factorization: the sum trick against a brute-force O(n^2) reference, the
// gradient against finite differences, shared-context scoring against the
// merged example, a step that lowers the loss, and the numeric invariant.
#include "core/model/factorization.h"

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "core/optim/loss.h"
#include "core/optim/numeric_bounds.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

// The parameter: a kind, and whether it normalises each instance.
using KindAndNormalization = std::tuple<FactorizationConfig::Kind, bool>;

FactorizationConfig Config(KindAndNormalization param, int dim, int fields) {
  FactorizationConfig c;
  c.kind = std::get<0>(param);
  c.normalize = std::get<1>(param);
  c.dim = dim;
  for (int f = 0; f < fields; ++f) c.fields.push_back("f" + std::to_string(f));
  c.init_scale = 0.5;
  c.init_seed = 3;
  return c;
}

// Random terms of random fields, rows in `table`.
std::vector<FactorTerm> RandomTerms(const Factorization& fm, FactorTable* table, int n,
                                    std::mt19937_64* rng, uint64_t first_key = 1) {
  std::uniform_real_distribution<double> value(-2, 2);
  std::uniform_int_distribution<int> field(0, fm.num_fields() - 1);
  std::vector<FactorTerm> terms;
  for (int i = 0; i < n; ++i) {
    FactorTerm t;
    t.key = first_key + i;
    t.x = value(*rng);
    t.field = static_cast<uint32_t>(field(*rng));
    table->FindOrInsert(t.key);
    terms.push_back(t);
  }
  // Rows are fixed once every key is in.
  for (FactorTerm& t : terms) t.row = table->Find(t.key);
  // Random factors, signs too, beyond the initial ones.
  std::normal_distribution<double> normal(0, 0.7);
  for (FactorTerm& t : terms) {
    for (int j = 0; j < fm.row_floats(); ++j) t.row[j] = static_cast<float>(normal(*rng));
  }
  return terms;
}

// sum_{i<j} <v_i, v_j> x_i x_j (FM), <w_{i,f_j}, w_{j,f_i}> x_i x_j (FFM),
// divided by sum_i x_i^2 when `normalize`: libffm's instance normalisation,
// the pairs of the instance scaled to unit length.
double BruteForce(const Factorization& fm, absl::Span<const FactorTerm> terms, bool normalize) {
  double margin = 0;
  double squared = 0;
  for (const FactorTerm& t : terms) squared += t.x * t.x;
  const int k = fm.dim();
  for (size_t i = 0; i < terms.size(); ++i) {
    for (size_t j = i + 1; j < terms.size(); ++j) {
      const float* vi = terms[i].row + (fm.field_aware() ? terms[j].field * k : 0);
      const float* vj = terms[j].row + (fm.field_aware() ? terms[i].field * k : 0);
      double dot = 0;
      for (int d = 0; d < k; ++d) dot += static_cast<double>(vi[d]) * vj[d];
      margin += dot * terms[i].x * terms[j].x;
    }
  }
  return normalize && squared > 0 ? margin / squared : margin;
}

class FactorizationKinds : public ::testing::TestWithParam<KindAndNormalization> {
 protected:
  bool normalize() const { return std::get<1>(GetParam()); }
};

TEST_P(FactorizationKinds, TheSumTrickEqualsTheBruteForcePairs) {
  std::mt19937_64 rng(11);
  for (int fields : {1, 2, 5}) {
    for (int n : {0, 1, 2, 7, 30}) {
      const FactorizationConfig config = Config(GetParam(), 3, fields);
      const Factorization fm(config);
      FactorTable table(fm);
      const std::vector<FactorTerm> terms = RandomTerms(fm, &table, n, &rng);
      Factorization::Sums sums;
      fm.ComputeSums(terms, &sums);
      const double expected = BruteForce(fm, terms, normalize());
      EXPECT_NEAR(fm.PairwiseMargin(sums), expected, 1e-9 * (1 + std::abs(expected)))
          << "fields " << fields << " n " << n;
    }
  }
}

TEST_P(FactorizationKinds, TheGradientMatchesFiniteDifferences) {
  std::mt19937_64 rng(5);
  const Factorization fm(Config(GetParam(), 4, 3));
  FactorTable table(fm);
  std::vector<FactorTerm> terms = RandomTerms(fm, &table, 9, &rng);
  Factorization::Sums sums;
  fm.ComputeSums(terms, &sums);
  std::vector<double> gradient(fm.row_floats());
  for (size_t i = 0; i < terms.size(); ++i) {
    fm.MarginGradient(terms, sums, i, gradient.data());
    for (int j = 0; j < fm.row_floats(); ++j) {
      const float kept = terms[i].row[j];
      const double h = 1e-3;
      terms[i].row[j] = static_cast<float>(kept + h);
      const double plus = BruteForce(fm, terms, normalize());
      const double stepped_up = terms[i].row[j] - static_cast<double>(kept);
      terms[i].row[j] = static_cast<float>(kept - h);
      const double minus = BruteForce(fm, terms, normalize());
      const double stepped_down = static_cast<double>(kept) - terms[i].row[j];
      terms[i].row[j] = kept;
      // The margin is linear in each factor: the difference is exact up to
      // the float steps actually taken.
      EXPECT_NEAR(gradient[j], (plus - minus) / (stepped_up + stepped_down), 1e-6)
          << "term " << i << " factor " << j;
    }
  }
}

TEST_P(FactorizationKinds, ACandidateWithASharedContextScoresAsTheMergedExample) {
  std::mt19937_64 rng(8);
  const Factorization fm(Config(GetParam(), 3, 4));
  FactorTable table(fm);
  std::vector<FactorTerm> context = RandomTerms(fm, &table, 12, &rng, 1);
  std::vector<FactorTerm> candidate = RandomTerms(fm, &table, 6, &rng, 100);
  for (FactorTerm& t : context) t.row = table.Find(t.key);
  // One candidate feature repeats a context feature (same key and field).
  candidate[2].key = context[4].key;
  candidate[2].field = context[4].field;
  candidate[2].row = table.Find(context[4].key);
  Factorization::Sums context_sums;
  fm.ComputeSums(context, &context_sums, /*keep_keys=*/true);
  Factorization::Sums scratch;
  const double shared = fm.CandidateMargin(context_sums, candidate, &scratch);
  // The example an update sees: the union, the repeated key merged.
  std::vector<FactorTerm> merged = context;
  merged[4].x += candidate[2].x;
  for (size_t i = 0; i < candidate.size(); ++i) {
    if (i != 2) merged.push_back(candidate[i]);
  }
  const double expected = BruteForce(fm, merged, normalize());
  EXPECT_NEAR(shared, expected, 1e-9 * (1 + std::abs(expected)));
}

TEST_P(FactorizationKinds, ThePairsAddUpToThePairwiseMargin) {
  std::mt19937_64 rng(13);
  const Factorization fm(Config(GetParam(), 3, 4));
  FactorTable table(fm);
  const std::vector<FactorTerm> terms = RandomTerms(fm, &table, 9, &rng);
  std::vector<PairContribution> pairs;
  fm.Pairs(terms, &pairs);
  ASSERT_EQ(pairs.size(), 9u * 8u / 2u);
  double sum = 0;
  for (const PairContribution& p : pairs) {
    sum += p.contribution;
    EXPECT_LT(p.key_a, p.key_b);
  }
  const double expected = BruteForce(fm, terms, normalize());
  EXPECT_NEAR(sum, expected, 1e-9 * (1 + std::abs(expected)));
  KeepTopPairs(2, &pairs);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_GE(std::abs(pairs[0].contribution), std::abs(pairs[1].contribution));
}

TEST_P(FactorizationKinds, AStepLowersTheLossOfItsExample) {
  std::mt19937_64 rng(2);
  const Factorization fm(Config(GetParam(), 4, 3));
  FactorTable table(fm);
  const std::vector<FactorTerm> terms = RandomTerms(fm, &table, 8, &rng);
  for (double label : {0.0, 1.0}) {
    Factorization::Sums sums;
    fm.ComputeSums(terms, &sums);
    const double before = fm.PairwiseMargin(sums);
    fm.Step(terms, sums, LossGradient(LossType::kLogistic, before, label));
    fm.ComputeSums(terms, &sums);
    const double after = fm.PairwiseMargin(sums);
    EXPECT_LT(Loss(LossType::kLogistic, after, label), Loss(LossType::kLogistic, before, label))
        << "label " << label;
  }
}

TEST_P(FactorizationKinds, AFactorWithoutAPartnerTakesNoStep) {
  const Factorization fm(Config(GetParam(), 2, 2));
  FactorTable table(fm);
  FactorTerm only{7, 1.0, 0, table.FindOrInsert(7)};
  const std::vector<float> kept(only.row, only.row + 2 * fm.row_floats());
  Factorization::Sums sums;
  fm.ComputeSums({&only, 1}, &sums);
  EXPECT_EQ(fm.PairwiseMargin(sums), 0.0);
  fm.Step({&only, 1}, sums, 0.5);
  EXPECT_EQ(std::vector<float>(only.row, only.row + 2 * fm.row_floats()), kept);
}

TEST_P(FactorizationKinds, ExtremeInputsNeverMakeAFactorNonFinite) {
  const Factorization fm(Config(GetParam(), 3, 2));
  FactorTable table(fm);
  std::vector<FactorTerm> terms;
  for (uint64_t key = 1; key <= 4; ++key) table.FindOrInsert(key);
  const double huge = kMaxFeatureValue * kMaxFeatureValue * kMaxFeatureValue;  // a 3-way cross
  for (uint64_t key = 1; key <= 4; ++key) {
    terms.push_back({key, key % 2 ? huge : -huge, static_cast<uint32_t>(key % 2), table.Find(key)});
  }
  for (int step = 0; step < 50; ++step) {
    Factorization::Sums sums;
    fm.ComputeSums(terms, &sums);
    const double margin = fm.PairwiseMargin(sums);
    ASSERT_FALSE(std::isnan(margin));
    const double dloss = ClampGradient(
        LossGradient(LossType::kSquared, margin, step % 2 ? 1e6 : -1e6) * kMaxImportance);
    fm.Step(terms, sums, dloss);
    for (const FactorTerm& t : terms) {
      for (size_t j = 0; j < table.stride(); ++j) {
        ASSERT_TRUE(std::isfinite(t.row[j])) << "step " << step;
        ASSERT_LE(std::abs(t.row[j]), kMaxStateValue);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(FmAndFfm, FactorizationKinds,
                         ::testing::Combine(::testing::Values(FactorizationConfig::Kind::kFm,
                                                              FactorizationConfig::Kind::kFfm),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(FactorizationKindName(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "_normalized" : "_raw");
                         });

TEST(FactorTable, InitialFactorsDependOnTheKeyAndSeedOnly) {
  const FactorizationConfig config = Config({FactorizationConfig::Kind::kFfm, true}, 4, 2);
  const Factorization fm(config);
  FactorTable a(fm);
  FactorTable b(fm);
  b.FindOrInsert(99);
  const float* ra = a.FindOrInsert(5);
  const float* rb = b.FindOrInsert(5);
  for (int j = 0; j < fm.row_floats(); ++j) {
    EXPECT_EQ(ra[j], rb[j]);
    EXPECT_GE(ra[j], 0.0f);
    EXPECT_LT(ra[j], 0.5f);
    EXPECT_EQ(ra[fm.row_floats() + j], 0.0f);
  }
  // An evicted key starts again from its initial factors.
  float* row = a.FindOrInsert(5);
  row[0] = 42.0f;
  a.Erase(5);
  EXPECT_EQ(a.Find(5), nullptr);
  EXPECT_EQ(a.FindOrInsert(5)[0], rb[0]);
  EXPECT_EQ(a.size(), 1u);
  FactorizationConfig other = config;
  other.init_seed = 4;
  const Factorization fm2(other);
  FactorTable c(fm2);
  EXPECT_NE(c.FindOrInsert(5)[0], rb[0]);
}

}  // namespace
}  // namespace clickd
