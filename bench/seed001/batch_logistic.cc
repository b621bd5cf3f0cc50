#include "bench/seed001/batch_logistic.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "core/optim/loss.h"

namespace clickd::seed001 {
namespace {

// log(1 + exp(z)) without overflow (the same expression as Evaluate's).
double Softplus(double z) { return std::max(z, 0.0) + std::log1p(std::exp(-std::abs(z))); }

class CoordinateDescent {
 public:
  CoordinateDescent(const SyntheticData& data, size_t prefix, const BatchOptions& options)
      : radius_(options.radius), margins_(prefix, 0.0) {
    BuildColumns(data, prefix);
    w_.assign(keys_.size(), 0.0);
    if (options.warm_start != nullptr) WarmStart(*options.warm_start);
  }

  // Steps every coordinate once; returns the total-loss decrease.
  double Sweep() {
    double decrease = 0;
    for (uint32_t i = 0; i + 1 < begin_.size(); ++i) decrease += Step(i);
    return decrease;
  }

  double Loss() const {
    double sum = 0;
    for (size_t t = 0; t < margins_.size(); ++t) sum += Softplus(-y_[t] * margins_[t]);
    return sum;
  }

  std::vector<double> ExampleLosses() const {
    std::vector<double> out(margins_.size());
    for (size_t t = 0; t < margins_.size(); ++t) out[t] = Softplus(-y_[t] * margins_[t]);
    return out;
  }

  double MaxProjectedGradient() const {
    double worst = 0;
    for (uint32_t i = 0; i + 1 < begin_.size(); ++i) {
      double g = Evaluate(i).g;
      if (w_[i] >= radius_) g = std::max(g, 0.0);
      if (w_[i] <= -radius_) g = std::min(g, 0.0);
      worst = std::max(worst, std::abs(g));
    }
    return worst;
  }

  uint64_t coordinates() const { return w_.size(); }

 private:
  void WarmStart(const Model& model) {
    for (uint32_t i = 0; i < keys_.size(); ++i) {
      const HashedFeature unit{keys_[i], 1.0f};
      w_[i] = std::clamp(model.Margin({&unit, 1}), -radius_, radius_);
      for (uint32_t k = begin_[i]; k < begin_[i + 1]; ++k) {
        margins_[example_[k]] += w_[i] * value_[k];
      }
    }
  }

  // Maps keys to dense ids and lays the examples out by column.
  void BuildColumns(const SyntheticData& data, size_t prefix) {
    absl::flat_hash_map<uint64_t, uint32_t> ids;
    std::vector<uint32_t> count;
    std::vector<uint32_t> dense(prefix * data.width);
    for (size_t t = 0; t < prefix; ++t) {
      y_.push_back(data.labels[t] > 0 ? 1.0 : -1.0);
      for (size_t j = 0; j < data.width; ++j) {
        const uint64_t key = data.Example(t)[j].key;
        auto [it, inserted] = ids.try_emplace(key, count.size());
        if (inserted) {
          count.push_back(0);
          keys_.push_back(key);
        }
        ++count[it->second];
        dense[t * data.width + j] = it->second;
      }
    }
    begin_.assign(count.size() + 1, 0);
    for (size_t i = 0; i < count.size(); ++i) begin_[i + 1] = begin_[i] + count[i];
    example_.resize(begin_.back());
    value_.resize(begin_.back());
    std::vector<uint32_t> next(begin_.begin(), begin_.end() - 1);
    for (size_t t = 0; t < prefix; ++t) {
      for (size_t j = 0; j < data.width; ++j) {
        const uint32_t slot = next[dense[t * data.width + j]]++;
        example_[slot] = static_cast<uint32_t>(t);
        value_[slot] = data.Example(t)[j].value;
      }
    }
  }

  struct Column {
    double loss = 0;  // sum of the column's example losses
    double g = 0;     // first derivative along the coordinate
    double h = 0;     // second derivative
  };

  // Returns the loss and derivatives of coordinate i's examples, sharing one
  // exp per example between the sigmoid and the softplus.
  Column Evaluate(uint32_t i) const {
    Column c;
    for (uint32_t k = begin_[i]; k < begin_[i + 1]; ++k) {
      const uint32_t t = example_[k];
      const double x = value_[k];
      const double z = -y_[t] * margins_[t];
      const double e = std::exp(-std::abs(z));
      const double p = z >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);  // P(wrong label)
      c.loss += std::max(z, 0.0) + std::log1p(e);
      c.g -= y_[t] * x * p;
      c.h += x * x * p * (1.0 - p);
    }
    return c;
  }

  // Sum of the losses of the examples in column i, with w_i moved by `delta`.
  double ColumnLoss(uint32_t i, double delta) const {
    double sum = 0;
    for (uint32_t k = begin_[i]; k < begin_[i + 1]; ++k) {
      const uint32_t t = example_[k];
      sum += Softplus(-y_[t] * (margins_[t] + delta * value_[k]));
    }
    return sum;
  }

  // Takes one projected Newton step on coordinate i with Armijo backtracking;
  // returns the loss decrease (0 if no step was accepted).
  double Step(uint32_t i) {
    const Column c = Evaluate(i);
    const double g = c.g;
    const double target = std::clamp(w_[i] - g / std::max(c.h, 1e-12), -radius_, radius_);
    const double d = target - w_[i];
    if (d == 0) return 0;
    const double before = c.loss;
    for (double lambda = 1; lambda > 1e-9; lambda *= 0.5) {
      const double after = ColumnLoss(i, lambda * d);
      if (after - before <= 0.01 * lambda * g * d) {
        const double delta = (lambda == 1) ? d : lambda * d;
        w_[i] = (lambda == 1) ? target : w_[i] + delta;
        for (uint32_t k = begin_[i]; k < begin_[i + 1]; ++k) {
          margins_[example_[k]] += delta * value_[k];
        }
        return before - after;
      }
    }
    return 0;
  }

  const double radius_;
  std::vector<double> y_;  // -1 or +1
  std::vector<double> margins_;
  std::vector<double> w_;
  std::vector<uint64_t> keys_;   // key of each dense id
  std::vector<uint32_t> begin_;  // column i is [begin_[i], begin_[i + 1])
  std::vector<uint32_t> example_;
  std::vector<float> value_;
};

}  // namespace

BatchResult SolveBoxLogistic(const SyntheticData& data, size_t prefix,
                             const BatchOptions& options) {
  CoordinateDescent solver(data, prefix, options);
  BatchResult result;
  while (result.sweeps < options.max_sweeps) {
    result.last_decrease = solver.Sweep();
    ++result.sweeps;
    if (result.last_decrease < options.tolerance) break;
  }
  result.loss = solver.Loss();
  result.max_projected_gradient = solver.MaxProjectedGradient();
  result.coordinates = solver.coordinates();
  result.example_losses = solver.ExampleLosses();
  return result;
}

}  // namespace clickd::seed001
