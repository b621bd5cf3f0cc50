// The memory budget's share per store and its validation (model_config.h).
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/model/model_config.h"
#include "core/optim/compact_ftrl.h"
#include "core/store/compact_table.h"

namespace clickd {

uint64_t MemberMemoryBytes(const ModelConfig& config) {
  return config.memory.max_bytes / (config.variants.size() + 1);
}

std::string_view StateEncodingName(StateEncoding encoding) {
  switch (encoding) {
    case StateEncoding::kFloat:
      return "float";
    case StateEncoding::kCompact:
      return "compact";
  }
  return "unknown";
}

absl::Status ParseStateEncoding(std::string_view name, StateEncoding* encoding) {
  for (StateEncoding e : {StateEncoding::kFloat, StateEncoding::kCompact}) {
    if (name == StateEncodingName(e)) {
      *encoding = e;
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("memory.encoding \"", std::string(name),
                                                 "\" is unknown; one of: float, compact"));
}

namespace {

// Whether the model's optimizer and every variant's are FTRL: the compact
// encoding and the TTL's stamps exist for FTRL's states only.
bool AllFtrl(const ModelConfig& config) {
  if (config.optimizer.type != OptimizerType::kFtrl) return false;
  for (const ModelVariant& v : config.variants) {
    if (v.optimizer.type != OptimizerType::kFtrl) return false;
  }
  return true;
}

absl::Status ValidateEncoding(const ModelConfig& config) {
  switch (config.memory.encoding) {
    case StateEncoding::kFloat:
      return absl::OkStatus();
    case StateEncoding::kCompact:
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("memory.encoding is ",
                                                     static_cast<uint32_t>(config.memory.encoding),
                                                     "; must be float (0) or compact (1)"));
  }
  if (!AllFtrl(config)) {
    return absl::InvalidArgumentError(
        "memory.encoding compact holds FTRL's z and n in 16 bits; the model's optimizer and "
        "every variant's must be ftrl");
  }
  return absl::OkStatus();
}

absl::Status ValidateTtl(const ModelConfig& config) {
  const uint64_t ttl = config.memory.ttl_rounds;
  if (ttl == 0) return absl::OkStatus();
  if (ttl < kMinTtlRounds || ttl > kMaxTtlRounds) {
    return absl::InvalidArgumentError(absl::StrCat("memory.ttl_rounds is ", ttl,
                                                   "; must be 0 (no TTL) or in ", kMinTtlRounds,
                                                   "..", kMaxTtlRounds, " (2^48)"));
  }
  if (!AllFtrl(config)) {
    return absl::InvalidArgumentError(
        "memory.ttl_rounds stamps FTRL's states with the epoch of their last step; the model's "
        "optimizer and every variant's must be ftrl");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateMemoryConfig(const ModelConfig& config) {
  if (absl::Status s = ValidateEncoding(config); !s.ok()) return s;
  if (absl::Status s = ValidateTtl(config); !s.ok()) return s;
  const uint64_t max_bytes = config.memory.max_bytes;
  if (max_bytes == 0) return absl::OkStatus();
  if (max_bytes < kMinMemoryBytes || max_bytes > kMaxMemoryBytes) {
    return absl::InvalidArgumentError(absl::StrCat("memory.max_bytes is ", max_bytes,
                                                   "; must be 0 (unbounded) or in ",
                                                   kMinMemoryBytes, "..", kMaxMemoryBytes));
  }
  if (config.optimizer.type == OptimizerType::kDense) {
    return absl::InvalidArgumentError(
        "memory.max_bytes budgets the sparse optimizers' coordinates; a dense learner has none");
  }
  const uint64_t per_shard =
      MemberMemoryBytes(config) / static_cast<uint64_t>(std::max(1, config.num_shards));
  if (per_shard < kMinShardMemoryBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "memory.max_bytes is ", max_bytes, ": ", per_shard, " bytes for each of the ",
        config.num_shards, " shards of each of the model's ", config.variants.size() + 1,
        " stores (the primary and each variant); must give each at least ", kMinShardMemoryBytes));
  }
  if (config.memory.encoding == StateEncoding::kCompact) {
    // The compact table's directory and subtable headers come first.
    const uint64_t fixed = CompactTable<CompactFtrl::State>::FixedBytes(config.num_shards);
    if (per_shard < fixed + kMinShardMemoryBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "memory.max_bytes is ", max_bytes, ": ", per_shard, " bytes for each of the ",
          config.num_shards, " shards of each of the model's ", config.variants.size() + 1,
          " stores; with memory.encoding compact each needs at least ",
          fixed + kMinShardMemoryBytes, " (its tables' fixed part, ", fixed, ", and ",
          kMinShardMemoryBytes, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace clickd
