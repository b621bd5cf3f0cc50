#include "server/metrics/counter.h"

namespace clickd::metrics {

double Counter::Value() const {
  double sum = 0;
  for (const Cell& cell : cells_) sum += cell.value.load(std::memory_order_relaxed);
  return sum;
}

ClientMetric Counter::Collect(const Labels& labels) const {
  ClientMetric m;
  m.labels = labels;
  m.value = Value();
  return m;
}

}  // namespace clickd::metrics
