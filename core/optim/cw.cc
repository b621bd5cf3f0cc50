#include "core/optim/cw.h"

#include <cmath>

namespace clickd {

double NormalQuantile(double p) {
  // Bisection on Phi(x) = erfc(-x / sqrt 2) / 2, which is increasing: about
  // 60 halvings of [-40, 40] reach adjacent doubles. Called once per model.
  double lo = -40, hi = 40;
  while (true) {
    const double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) return mid;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
}

double CwAlpha(double m, double v, double phi) {
  if (!(v > 0)) return 0;
  const double c = m - phi * v;
  if (c >= 0) return 0;  // the constraint M >= phi V already holds
  const double b = 1 + 2 * phi * m;
  const double root = std::sqrt(b * b - 8 * phi * c);
  // (-b + root) / (4 phi v), written without cancellation when b > 0:
  // multiplying by (b + root) gives -8 phi c / (4 phi v (b + root)).
  return b > 0 ? -2 * c / (v * (b + root)) : (root - b) / (4 * phi * v);
}

}  // namespace clickd
