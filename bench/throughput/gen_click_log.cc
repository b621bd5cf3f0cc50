// gen_click_log: writes a deterministic synthetic click log in Vowpal Wabbit
// text format, shaped like a display-advertising log (docs/performance.md,
// "The synthetic click log", documents the shape; kNamespaces below is it).
//
//   gen_click_log [--examples=2000000] [--seed=1] OUT.vw
//
// Every example has 40 categorical features in 7 namespaces, each drawn from
// a Zipf vocabulary; its label (-1 / 1) is drawn from a hidden logistic
// model. All randomness comes from SplitMix64 and Vose alias tables built
// here, never from the standard distributions (whose output is
// implementation-defined); only libm's pow and exp could differ between
// platforms. The file is written to OUT.tmp and renamed over OUT.
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "xxhash.h"

namespace {

// One namespace of the log: `count` distinct features per example from a
// vocabulary of `vocabulary` values with Zipf exponent `zipf_s`. The hidden
// model gives each value a weight ~ N(0, weight_sd^2).
struct NamespaceSpec {
  const char* name;
  const char* meaning;
  int count;
  uint32_t vocabulary;
  double zipf_s;
  double weight_sd;
};

constexpr NamespaceSpec kNamespaces[] = {
    {"u", "user id", 1, 500000, 1.05, 0.50},
    {"s", "user segments", 12, 5000, 1.10, 0.12},
    {"q", "query / keyword tokens", 8, 200000, 1.05, 0.15},
    {"p", "page: site, section, url tokens", 6, 50000, 1.10, 0.20},
    {"a", "ad: ad, creative, campaign, advertiser", 4, 20000, 1.15, 0.35},
    {"d", "device, os, browser, geo", 6, 300, 1.20, 0.12},
    {"t", "hour, weekday, slot, position", 3, 400, 1.20, 0.15},
};
constexpr double kBias = -4.2;  // hidden intercept: CTR of about 3.5%

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return Mix(state_ += 0x9E3779B97F4A7C15ull); }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  static uint64_t Mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

// Vose's alias method: O(1) draws from P(rank r) ~ 1 / (r + 1)^s.
class ZipfSampler {
 public:
  ZipfSampler(uint32_t n, double s) : prob_(n), alias_(n) {
    std::vector<double> p(n);
    double sum = 0;
    for (uint32_t r = 0; r < n; ++r) sum += p[r] = std::pow(r + 1.0, -s);
    std::vector<uint32_t> small, large;
    for (uint32_t r = 0; r < n; ++r) {
      p[r] *= n / sum;
      (p[r] < 1.0 ? small : large).push_back(r);
    }
    while (!small.empty() && !large.empty()) {
      const uint32_t l = small.back(), g = large.back();
      small.pop_back();
      prob_[l] = p[l];
      alias_[l] = g;
      p[g] -= 1.0 - p[l];
      if (p[g] < 1.0) {
        large.pop_back();
        small.push_back(g);
      }
    }
    for (uint32_t r : large) prob_[r] = 1.0, alias_[r] = r;
    for (uint32_t r : small) prob_[r] = 1.0, alias_[r] = r;  // rounding leftovers
  }

  uint32_t Draw(SplitMix64& rng) const {
    const uint32_t column = static_cast<uint32_t>(rng.Next() % prob_.size());
    return rng.Uniform() < prob_[column] ? column : alias_[column];
  }

 private:
  std::vector<double> prob_;
  std::vector<uint32_t> alias_;
};

// The feature string of a rank: fixed width per namespace (one base-36 digit
// more than the vocabulary needs), scrambled by a multiplication that is a
// bijection modulo 36^width, so that popular values do not look alike.
class TokenCoder {
 public:
  explicit TokenCoder(uint32_t vocabulary) {
    uint64_t needed = 1;
    for (width_ = 0; needed < vocabulary; ++width_) needed *= 36;
    width_ += 1;
    modulus_ = needed * 36;
  }

  // Appends the token of `rank` to *out.
  void Append(uint32_t rank, std::string* out) const {
    static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    uint64_t v = ((rank + 1ull) * kMultiplier) % modulus_;  // kMultiplier is coprime to 6
    char digits[16];
    for (int i = width_ - 1; i >= 0; --i, v /= 36) digits[i] = kDigits[v % 36];
    out->append(digits, width_);
  }

  int width() const { return width_; }

 private:
  static constexpr uint64_t kMultiplier = 1000003;
  int width_;
  uint64_t modulus_;
};

// The hidden model's weight of one value: the sum of four uniforms, centred
// and scaled to unit variance (no libm), times the namespace's sd.
double TrueWeight(uint64_t seed, int ns, uint32_t rank, double sd) {
  uint64_t h = SplitMix64::Mix(seed ^ (uint64_t{static_cast<uint32_t>(ns) + 1} << 40) ^ rank);
  double sum = 0;
  for (int i = 0; i < 4; ++i) {
    h = SplitMix64::Mix(h + 0x9E3779B97F4A7C15ull);
    sum += static_cast<double>(h >> 11) * 0x1.0p-53;
  }
  return (sum - 2.0) * std::sqrt(3.0) * sd;
}

struct Args {
  uint64_t examples = 2000000;
  uint64_t seed = 1;
  std::string out;
};

bool ParseArgs(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.rfind("--examples=", 0) == 0) {
      args->examples = std::strtoull(argv[i] + 11, nullptr, 10);
    } else if (a.rfind("--seed=", 0) == 0) {
      args->seed = std::strtoull(argv[i] + 7, nullptr, 10);
    } else if (a.rfind("--", 0) == 0 || !args->out.empty()) {
      return false;
    } else {
      args->out = a;
    }
  }
  return !args->out.empty() && args->examples > 0;
}

// Appends one example's line (with '\n') to *line; returns its label.
int AppendExample(const std::vector<ZipfSampler>& samplers, const std::vector<TokenCoder>& coders,
                  uint64_t seed, SplitMix64& rng, std::vector<std::vector<bool>>& seen,
                  std::string* line) {
  std::string body;
  double margin = kBias;
  uint32_t drawn[16];
  for (size_t ns = 0; ns < std::size(kNamespaces); ++ns) {
    const NamespaceSpec& spec = kNamespaces[ns];
    body += " |";
    body += spec.name;
    for (int k = 0; k < spec.count; ++k) {
      uint32_t rank;
      bool repeated;
      do {  // distinct values within a namespace, as a real multi-valued field has
        rank = samplers[ns].Draw(rng);
        repeated = false;
        for (int j = 0; j < k; ++j) repeated |= drawn[j] == rank;
      } while (repeated);
      drawn[k] = rank;
      seen[ns][rank] = true;
      margin += TrueWeight(seed, static_cast<int>(ns), rank, spec.weight_sd);
      body += ' ';
      coders[ns].Append(rank, &body);
    }
  }
  const double p = 1.0 / (1.0 + std::exp(-margin));
  const int label = rng.Uniform() < p ? 1 : -1;
  *line += label > 0 ? "1" : "-1";
  *line += body;
  *line += '\n';
  return label;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) {
    std::fprintf(stderr, "usage: gen_click_log [--examples=N] [--seed=S] OUT.vw\n");
    return 2;
  }
  std::vector<ZipfSampler> samplers;
  std::vector<TokenCoder> coders;
  std::vector<std::vector<bool>> seen;
  int features = 0;
  for (const NamespaceSpec& spec : kNamespaces) {
    samplers.emplace_back(spec.vocabulary, spec.zipf_s);
    coders.emplace_back(spec.vocabulary);
    seen.emplace_back(spec.vocabulary, false);
    features += spec.count;
  }

  const std::string tmp = args.out + ".tmp";
  std::FILE* file = std::fopen(tmp.c_str(), "wb");
  if (file == nullptr) {
    std::fprintf(stderr, "gen_click_log: cannot open %s: %s\n", tmp.c_str(), std::strerror(errno));
    return 1;
  }
  SplitMix64 rng(args.seed);
  XXH3_state_t* digest = XXH3_createState();
  XXH3_64bits_reset(digest);
  std::string chunk;
  uint64_t clicks = 0, bytes = 0;
  for (uint64_t i = 0; i < args.examples; ++i) {
    clicks += AppendExample(samplers, coders, args.seed, rng, seen, &chunk) > 0;
    if (chunk.size() >= (1 << 20) || i + 1 == args.examples) {
      XXH3_64bits_update(digest, chunk.data(), chunk.size());
      bytes += chunk.size();
      if (std::fwrite(chunk.data(), 1, chunk.size(), file) != chunk.size()) {
        std::fprintf(stderr, "gen_click_log: write to %s failed\n", tmp.c_str());
        std::fclose(file);
        std::remove(tmp.c_str());
        return 1;
      }
      chunk.clear();
    }
  }
  if (std::fclose(file) != 0 || std::rename(tmp.c_str(), args.out.c_str()) != 0) {
    std::fprintf(stderr, "gen_click_log: cannot publish %s: %s\n", args.out.c_str(),
                 std::strerror(errno));
    std::remove(tmp.c_str());
    return 1;
  }

  std::printf("wrote %s: %llu examples, %d features + label each, %llu bytes (%.1f per line)\n",
              args.out.c_str(), static_cast<unsigned long long>(args.examples), features,
              static_cast<unsigned long long>(bytes), static_cast<double>(bytes) / args.examples);
  std::printf("CTR %.4f, seed %llu, xxh3 %016llx\n", static_cast<double>(clicks) / args.examples,
              static_cast<unsigned long long>(args.seed),
              static_cast<unsigned long long>(XXH3_64bits_digest(digest)));
  XXH3_freeState(digest);
  std::printf("%-3s %-40s %5s %10s %6s %6s %12s\n", "ns", "stands for", "count", "vocabulary",
              "zipf_s", "width", "values seen");
  uint64_t total_seen = 0;
  for (size_t ns = 0; ns < std::size(kNamespaces); ++ns) {
    const NamespaceSpec& spec = kNamespaces[ns];
    uint64_t n = 0;
    for (bool b : seen[ns]) n += b;
    total_seen += n;
    std::printf("%-3s %-40s %5d %10u %6.2f %6d %12llu\n", spec.name, spec.meaning, spec.count,
                spec.vocabulary, spec.zipf_s, coders[ns].width(),
                static_cast<unsigned long long>(n));
  }
  std::printf("distinct (namespace, value) pairs: %llu\n",
              static_cast<unsigned long long>(total_seen));
  return 0;
}
