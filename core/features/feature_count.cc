#include "core/features/feature_count.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace clickd {
namespace {

// Features of the namespaces named `name`, over the context and the example.
uint64_t TermSize(std::string_view name, absl::Span<const NamespaceSize> context,
                  absl::Span<const NamespaceSize> example) {
  uint64_t n = 0;
  for (auto part : {context, example}) {
    for (const NamespaceSize& ns : part) {
      if (ns.name == name) n = SaturatingAdd(n, ns.features);
    }
  }
  return n;
}

// n choose k for k = 2 or 3: the strictly increasing position tuples Hash
// crosses when k adjacent terms name one namespace.
uint64_t Choose(uint64_t n, int k) {
  if (n < static_cast<uint64_t>(k)) return 0;
  // n (n-1) is even, and n (n-1) (n-2) is divisible by 6: divide one factor
  // first so that nothing overflows before it must.
  if (k == 2) return n % 2 == 0 ? SaturatingMul(n / 2, n - 1) : SaturatingMul(n, (n - 1) / 2);
  uint64_t a = n, b = n - 1, c = n - 2;
  for (uint64_t* f : {&a, &b, &c}) {
    if (*f % 2 == 0) {
      *f /= 2;
      break;
    }
  }
  for (uint64_t* f : {&a, &b, &c}) {
    if (*f % 3 == 0) {
      *f /= 3;
      break;
    }
  }
  return SaturatingMul(SaturatingMul(a, b), c);
}

// Crosses of one interaction (2 or 3 names; others yield none, as
// ValidateHashingConfig refuses them).
uint64_t CountCrosses(const std::vector<std::string>& names,
                      absl::Span<const NamespaceSize> context,
                      absl::Span<const NamespaceSize> example) {
  const size_t arity = std::min<size_t>(names.size(), 3);
  if (arity < 2) return 0;
  uint64_t product = 1;
  // Runs of adjacent equal names count as combinations, others multiply.
  for (size_t j = 0; j < arity;) {
    size_t run = 1;
    while (j + run < arity && names[j + run] == names[j]) ++run;
    const uint64_t n = TermSize(names[j], context, example);
    product = SaturatingMul(product, run == 1 ? n : Choose(n, static_cast<int>(run)));
    j += run;
  }
  return product;
}

}  // namespace

uint64_t CountHashedFeatures(const HashingConfig& config, absl::Span<const NamespaceSize> context,
                             absl::Span<const NamespaceSize> example) {
  uint64_t count = config.bias ? 1 : 0;
  for (auto part : {context, example}) {
    for (const NamespaceSize& ns : part) count = SaturatingAdd(count, ns.features);
  }
  for (const std::vector<std::string>& names : config.interactions) {
    count = SaturatingAdd(count, CountCrosses(names, context, example));
  }
  return count;
}

std::vector<NamespaceSize> NamespaceSizes(const Example& example) {
  std::vector<NamespaceSize> sizes;
  sizes.reserve(example.namespaces.size());
  for (const Namespace& ns : example.namespaces) {
    uint64_t nonzero = 0;
    for (const Feature& f : ns.features) nonzero += f.value != 0.0f;
    sizes.push_back({ns.name, nonzero});
  }
  return sizes;
}

uint64_t CountHashedFeatures(const HashingConfig& config, const Example* context,
                             const Example& example) {
  const std::vector<NamespaceSize> c =
      context == nullptr ? std::vector<NamespaceSize>() : NamespaceSizes(*context);
  return CountHashedFeatures(config, c, NamespaceSizes(example));
}

}  // namespace clickd
