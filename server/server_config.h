// Loading the models a server declares at boot: the optional --config file
// (protobuf JSON of clickd.v1.ServerConfig) and the embedded default model.
#ifndef CLICKD_SERVER_SERVER_CONFIG_H_
#define CLICKD_SERVER_SERVER_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/model_config.h"

namespace clickd {

// Parses a config file's text; errors name the file and the failing field.
absl::StatusOr<std::vector<ModelConfig>> ParseServerConfig(const std::string& json,
                                                           const std::string& path);

// Reads and parses a config file.
absl::StatusOr<std::vector<ModelConfig>> LoadServerConfig(const std::string& path);

// The embedded default model: "default", FTRL-Proximal, logistic loss,
// every hyperparameter at its documented default.
ModelConfig DefaultModelConfig();

}  // namespace clickd

#endif  // CLICKD_SERVER_SERVER_CONFIG_H_
