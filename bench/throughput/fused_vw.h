// What-if: parse and hash a Vowpal Wabbit text line in one pass, hashing
// each feature token where it lies in the line, with no LabeledExample (no
// Namespace/Feature objects, no string copies) in between. It exists only so
// that the benchmark can say what the parse -> Example -> Hash hand-off
// costs; the benchmark checks that its keys equal FeatureHasher::Hash's.
//
// Handles the lines gen_click_log writes and little more:
//   label |ns feat[:value] feat[:value] ... |ns ...
// with no importance, tag or namespace scale, and the hasher's default
// config (no interactions, no folding). Pure function; thread-compatible.
#ifndef CLICKD_BENCH_THROUGHPUT_FUSED_VW_H_
#define CLICKD_BENCH_THROUGHPUT_FUSED_VW_H_

#include <string_view>
#include <vector>

#include "core/features/hasher.h"

namespace clickd::bench {

// Appends the line's hashed features, then the bias, merged in
// first-appearance order as FeatureHasher::Hash does, to `out`, and sets
// *label. Returns false on a
// line outside the shape above.
bool ParseAndHashVwLine(const FeatureHasher& hasher, std::string_view line,
                        std::vector<HashedFeature>* out, float* label);

}  // namespace clickd::bench

#endif  // CLICKD_BENCH_THROUGHPUT_FUSED_VW_H_
