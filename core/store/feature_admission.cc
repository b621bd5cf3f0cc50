#include "core/store/feature_admission.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/base/coding.h"
#include "core/base/crc32c.h"

namespace clickd {
namespace {

constexpr std::string_view kMagic = "CFA1";  // clickd feature admission, format 1
constexpr uint64_t kMaxCounters = uint64_t{1} << 32;
// Seeds of the filter's slot hash, unrelated to any hashing seed of the
// model's features (those are already 64-bit hashes).
constexpr uint64_t kSlotSeed = 0x6a09e667f3bcc909ull;

}  // namespace

absl::Status ValidateAdmissionOptions(const AdmissionOptions& options, std::string_view field) {
  const absl::string_view prefix(field.data(), field.size());
  const auto invalid = [&](absl::string_view name, absl::string_view rule) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, ".", name, " ", rule));
  };
  switch (options.policy) {
    case AdmissionOptions::Policy::kAll:
      return absl::OkStatus();
    case AdmissionOptions::Policy::kPoisson:
      if (!(options.probability > 0 && options.probability <= 1)) {
        return invalid("probability",
                       absl::StrCat("is ", options.probability, "; must be in (0, 1]"));
      }
      return absl::OkStatus();
    case AdmissionOptions::Policy::kBloom:
      if (options.min_count < 1 || options.min_count > 255) {
        return invalid("min_count",
                       absl::StrCat("is ", options.min_count, "; must be in [1, 255]"));
      }
      if (options.counters < 64 || options.counters > kMaxCounters ||
          (options.counters & (options.counters - 1)) != 0) {
        return invalid("counters", absl::StrCat("is ", options.counters,
                                                "; must be a power of 2 in [64, 2^32]"));
      }
      if (options.generation_sightings < 1) {
        return invalid("generation_sightings", "is 0; must be >= 1");
      }
      return absl::OkStatus();
  }
  return invalid("policy", "is unknown");
}

FeatureAdmission::FeatureAdmission(const AdmissionOptions& options) : options_(options) {
  if (options_.policy == AdmissionOptions::Policy::kBloom) {
    MutexLock lock(&mu_);
    for (auto& generation : generations_) generation.assign(options_.counters, 0);
  }
}

uint64_t FeatureAdmission::Slot(uint64_t key, int i) const {
  // Double hashing (Kirsch and Mitzenmacher): k slots from two hashes.
  const XXH128_hash_t h = XXH3_128bits_withSeed(&key, sizeof(key), kSlotSeed);
  return (h.low64 + static_cast<uint64_t>(i) * (h.high64 | 1)) & (options_.counters - 1);
}

uint32_t FeatureAdmission::Count(uint64_t key) const {
  uint32_t count = 255;
  for (int i = 0; i < kHashes; ++i) {
    const uint64_t slot = Slot(key, i);
    count = std::min<uint32_t>(count, generations_[0][slot] + generations_[1][slot]);
  }
  return count;
}

void FeatureAdmission::Increment(uint64_t key) {
  std::vector<uint8_t>& current = generations_[current_];
  for (int i = 0; i < kHashes; ++i) {
    uint8_t& counter = current[Slot(key, i)];
    if (counter < 255) ++counter;
  }
  if (++current_sightings_ >= options_.generation_sightings) {
    current_ ^= 1;
    std::fill(generations_[current_].begin(), generations_[current_].end(), 0);
    current_sightings_ = 0;
  }
}

bool FeatureAdmission::Admit(uint64_t key, uint64_t round) {
  bool admit = true;
  switch (options_.policy) {
    case AdmissionOptions::Policy::kAll:
      return true;
    case AdmissionOptions::Policy::kPoisson: {
      const uint64_t draw = XXH3_64bits_withSeed(&key, sizeof(key), round);
      // draw / 2^64 is uniform in [0, 1).
      admit = std::ldexp(static_cast<double>(draw), -64) < options_.probability;
      sightings_.fetch_add(1, std::memory_order_relaxed);
      if (admit) admitted_.fetch_add(1, std::memory_order_relaxed);
      return admit;
    }
    case AdmissionOptions::Policy::kBloom: {
      MutexLock lock(&mu_);
      sightings_.fetch_add(1, std::memory_order_relaxed);
      // This sighting is number Count() + 1 (or more, by a false positive).
      admit = Count(key) + 1 >= options_.min_count;
      if (admit) {
        admitted_.fetch_add(1, std::memory_order_relaxed);
      } else {
        Increment(key);
      }
      return admit;
    }
  }
  return admit;
}

AdmissionStats FeatureAdmission::Stats() const {
  AdmissionStats stats;
  stats.sightings = sightings_.load(std::memory_order_relaxed);
  stats.admitted = admitted_.load(std::memory_order_relaxed);
  stats.bytes = options_.policy == AdmissionOptions::Policy::kBloom ? 2 * options_.counters : 0;
  return stats;
}

// Format 1: "CFA1", policy (fixed32), counters, sightings, admitted,
// current generation's sightings (fixed64), current generation (fixed32),
// then for kBloom both generations' counters (counters bytes each), then
// the masked CRC32C of all before it.
std::string FeatureAdmission::Encode() const {
  ReaderMutexLock lock(&mu_);
  std::string out(kMagic);
  coding::PutFixed32(&out, static_cast<uint32_t>(options_.policy));
  coding::PutFixed64(&out, options_.counters);
  coding::PutFixed64(&out, sightings_.load(std::memory_order_relaxed));
  coding::PutFixed64(&out, admitted_.load(std::memory_order_relaxed));
  coding::PutFixed64(&out, current_sightings_);
  coding::PutFixed32(&out, static_cast<uint32_t>(current_));
  if (options_.policy == AdmissionOptions::Policy::kBloom) {
    for (const auto& generation : generations_) {
      out.append(reinterpret_cast<const char*>(generation.data()), generation.size());
    }
  }
  crc32c::Seal(&out);
  return out;
}

absl::StatusOr<std::unique_ptr<FeatureAdmission>> FeatureAdmission::Decode(
    const AdmissionOptions& options, std::string_view bytes) {
  const auto damaged = [](absl::string_view what) {
    return absl::DataLossError(absl::StrCat("feature admission state damaged: ", what));
  };
  // The magic, then at least the CRC after it.
  if (bytes.size() < kMagic.size() + 4 || bytes.substr(0, kMagic.size()) != kMagic) {
    return damaged("no CFA1 header");
  }
  std::string_view body;
  if (!crc32c::Unseal(bytes, &body)) return damaged("checksum mismatch");
  coding::Decoder in(body.substr(kMagic.size()));
  uint32_t policy = 0, current = 0;
  uint64_t counters = 0, sightings = 0, admitted = 0, current_sightings = 0;
  if (!in.GetFixed32(&policy) || !in.GetFixed64(&counters) || !in.GetFixed64(&sightings) ||
      !in.GetFixed64(&admitted) || !in.GetFixed64(&current_sightings) || !in.GetFixed32(&current) ||
      current > 1 || admitted > sightings) {
    return damaged("bad header");
  }
  const bool bloom = options.policy == AdmissionOptions::Policy::kBloom;
  if (policy != static_cast<uint32_t>(options.policy) || (bloom && counters != options.counters)) {
    return absl::FailedPreconditionError(
        absl::StrCat("feature admission state is of policy ", policy, " with ", counters,
                     " counters; the model's options say policy ",
                     static_cast<uint32_t>(options.policy), " with ", options.counters));
  }
  auto admission = std::make_unique<FeatureAdmission>(options);
  MutexLock lock(&admission->mu_);
  if (bloom) {
    for (auto& generation : admission->generations_) {
      std::string_view counts;
      if (!in.GetBytes(counters, &counts)) return damaged("counters cut short");
      generation.assign(counts.begin(), counts.end());
    }
  }
  if (!in.remaining().empty()) return damaged("bytes after the counters");
  admission->current_ = static_cast<int>(current);
  admission->current_sightings_ = current_sightings;
  admission->sightings_.store(sightings, std::memory_order_relaxed);
  admission->admitted_.store(admitted, std::memory_order_relaxed);
  return admission;
}

void FeatureAdmission::Replace(FeatureAdmission* from) {
  MutexLock from_lock(&from->mu_);
  MutexLock lock(&mu_);
  for (int g = 0; g < 2; ++g) generations_[g].swap(from->generations_[g]);
  current_ = from->current_;
  current_sightings_ = from->current_sightings_;
  sightings_.store(from->sightings_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  admitted_.store(from->admitted_.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

}  // namespace clickd
