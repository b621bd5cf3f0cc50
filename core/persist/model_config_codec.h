// The binary encoding of a ModelConfig, shared by snapshots and the update
// log's header (docs/snapshot_format.md describes it). Pure functions,
// safe to call from any thread.
//
// Decoding checks every field and returns DataLoss ("snapshot is corrupt:
// ...") for bytes that are not a valid config of a known encoding version;
// decode-then-encode is the identity for the current version.
#ifndef CLICKD_CORE_PERSIST_MODEL_CONFIG_CODEC_H_
#define CLICKD_CORE_PERSIST_MODEL_CONFIG_CODEC_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/model/model_config.h"

namespace clickd {

// Appends the current version of the encoding of `config` to *out.
void EncodeModelConfig(const ModelConfig& config, std::string* out);

// Decodes exactly `bytes` (no trailing bytes) in any known encoding version.
absl::StatusOr<ModelConfig> DecodeModelConfig(std::string_view bytes);

}  // namespace clickd

#endif  // CLICKD_CORE_PERSIST_MODEL_CONFIG_CODEC_H_
