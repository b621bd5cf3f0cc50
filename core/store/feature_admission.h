// FeatureAdmission: whether a feature the model has never stored gets a
// coordinate now (issue 16; McMahan et al. 2013, "Ad Click Prediction: a
// View from the Trenches", section 4.1).
//
// Most features of click logs are seen once or a handful of times and never
// learn anything useful, yet each one costs a coordinate forever. Admission
// lets a new feature in only once it looks frequent:
//
//   - kPoisson: "probabilistic inclusion": at each sighting of a feature not
//     yet stored, admit it with probability p. A feature seen k times gets
//     in with probability 1 - (1 - p)^k. The draw is a hash of the key and
//     the model's round (the examples learned so far), so it needs no state
//     and a replay of the same log admits the same features.
//   - kBloom: "Bloom filter inclusion": a counting Bloom filter counts each
//     sighting of a feature not yet stored, and the feature gets in at its
//     min_count-th sighting (earlier only by a false positive, never later).
//     Two generations of `counters` 8-bit counters roll: once the current
//     one has counted `generation_sightings` sightings it becomes the old
//     one and the old one is cleared, so the filter forgets features not
//     seen for a while instead of filling up.
//
// A feature that is not admitted has weight 0 in the margin and gets no
// update, exactly as if it were absent from the example; once admitted it
// learns as usual. The filter's counts are model state: snapshots carry
// them (Encode/Decode), so a restore continues where the model was.
//
// Thread safety: safe for concurrent use. kPoisson takes no lock; kBloom
// locks its filter, and only sightings of features the model does not
// hold reach it, so that lock is rare after warm-up.
#ifndef CLICKD_CORE_STORE_FEATURE_ADMISSION_H_
#define CLICKD_CORE_STORE_FEATURE_ADMISSION_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"

namespace clickd {

struct AdmissionOptions {
  enum class Policy { kAll, kPoisson, kBloom };
  Policy policy = Policy::kAll;
  double probability = 1.0;                 // kPoisson: in (0, 1]
  uint32_t min_count = 2;                   // kBloom: in [1, 255]
  uint64_t counters = 1 << 20;              // kBloom: per generation, a power of 2
  uint64_t generation_sightings = 1 << 20;  // kBloom: > 0
};

// Checks ranges; errors name the field (prefixed with `field`) and the limit.
absl::Status ValidateAdmissionOptions(const AdmissionOptions& options, std::string_view field);

struct AdmissionStats {
  uint64_t sightings = 0;  // of features not stored
  uint64_t admitted = 0;
  uint64_t bytes = 0;  // the filter's counters
};

class FeatureAdmission {
 public:
  explicit FeatureAdmission(const AdmissionOptions& options);

  // Whether `key`, which the model does not store, gets a coordinate at
  // this sighting, the model having learned `round` examples before.
  bool Admit(uint64_t key, uint64_t round);

  AdmissionStats Stats() const;

  // The filter's state (counts, generation, statistics); Decode refuses
  // damage (DATA_LOSS) and a state of other options (FAILED_PRECONDITION).
  std::string Encode() const;
  static absl::StatusOr<std::unique_ptr<FeatureAdmission>> Decode(const AdmissionOptions& options,
                                                                  std::string_view bytes);

  // Takes `from`'s state (counts, generation, statistics), which must be of
  // the same options: a model decodes first and replaces only once every
  // part of a restored state has decoded, so a damaged one changes nothing.
  void Replace(FeatureAdmission* from);

 private:
  static constexpr int kHashes = 3;
  uint32_t Count(uint64_t key) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void Increment(uint64_t key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t Slot(uint64_t key, int i) const;

  const AdmissionOptions options_;
  mutable Mutex mu_;
  // kBloom: generations_[current_] counts now, the other one is older.
  std::vector<uint8_t> generations_[2] ABSL_GUARDED_BY(mu_);
  int current_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t current_sightings_ ABSL_GUARDED_BY(mu_) = 0;
  // Counted without mu_: kPoisson takes no lock at all, since it is asked
  // under the learner's shard locks, by every learner of the model.
  std::atomic<uint64_t> sightings_{0};
  std::atomic<uint64_t> admitted_{0};
};

}  // namespace clickd

#endif  // CLICKD_CORE_STORE_FEATURE_ADMISSION_H_
