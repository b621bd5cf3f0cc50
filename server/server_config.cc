#include "server/server_config.h"

#include <google/protobuf/util/json_util.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "clickd/v1/clickd.pb.h"
#include "core/model/model_config.h"
#include "wire/model_config_proto.h"

namespace clickd {

absl::StatusOr<std::vector<ModelConfig>> ParseServerConfig(const std::string& json,
                                                           const std::string& path) {
  v1::ServerConfig proto;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;  // a typo must not be silently ignored
  auto parsed = google::protobuf::util::JsonStringToMessage(json, &proto, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a valid clickd.v1.ServerConfig: ", parsed.message().ToString()));
  }
  std::vector<ModelConfig> out;
  for (int i = 0; i < proto.models_size(); ++i) {
    auto config = ToModelConfig(proto.models(i));
    if (!config.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": models[", i, "].", config.status().message()));
    }
    for (const ModelConfig& previous : out) {
      if (previous.name == config->name) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": models[", i, "].config.name \"",
                                                       config->name, "\" is declared twice"));
      }
    }
    // Used only if the model is created now (a restored one keeps its own).
    if (config->feedback.enabled()) config->feedback.id_tag = NewImpressionIdTag();
    out.push_back(*std::move(config));
  }
  return out;
}

absl::StatusOr<std::vector<ModelConfig>> LoadServerConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read config file ", path));
  std::stringstream text;
  text << in.rdbuf();
  return ParseServerConfig(text.str(), path);
}

ModelConfig DefaultModelConfig() {
  ModelConfig config;
  config.name = "default";
  return config;
}

}  // namespace clickd
