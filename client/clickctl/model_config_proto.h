// Converts a core ModelConfig (built from clickctl's model flags) into the
// clickd.v1.ModelConfig that CreateModel takes. Pure function.
//
// The server has the same conversion (server/convert.h ToProto); clickctl
// keeps its own so that the client does not link the server, and
// model_config_proto_test.cc checks that the two agree for every optimizer.
#ifndef CLICKD_CLIENT_CLICKCTL_MODEL_CONFIG_PROTO_H_
#define CLICKD_CLIENT_CLICKCTL_MODEL_CONFIG_PROTO_H_

#include "clickd/v1/clickd.pb.h"
#include "core/model/model_config.h"

namespace clickd {

// Every field spelled out: the selected optimizer's hyperparameters (the
// others do not apply and stay unset), the loss, hashing and shards.
v1::ModelConfig ModelConfigToProto(const ModelConfig& config);

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_MODEL_CONFIG_PROTO_H_
