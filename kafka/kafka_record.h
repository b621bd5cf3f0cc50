// One Kafka record turned into the UpdateRequest it stands for, in the
// source's format (docs/kafka.md):
//   vw     one Vowpal Wabbit text line (core/formats/parse.h; a trailing
//          newline is allowed), one example;
//   json   a clickd.v1.UpdateRequest in protobuf's JSON mapping;
//   proto  a clickd.v1.UpdateRequest's bytes.
// A feedback topic's records are clickd.v1.FeedbackRequests (json, proto).
// Records longer than limits.max_message_bytes are refused before they are
// parsed. The request is then checked as an Update is
// (ValidateUpdateRequest): every limit that guards the RPC guards the
// source.
//
// Pure functions.
#ifndef CLICKD_KAFKA_KAFKA_RECORD_H_
#define CLICKD_KAFKA_KAFKA_RECORD_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "clickd/v1/clickd.pb.h"
#include "core/model/model_config.h"
#include "server/limits.h"

namespace clickd {

absl::StatusOr<v1::UpdateRequest> ParseKafkaRecord(KafkaFormat format, std::string_view bytes,
                                                   const Limits& limits);

// One record of a feedback topic: a clickd.v1.FeedbackRequest as JSON or
// protobuf bytes (vw is refused: a VW line has no impression id). Its
// `model` and `idempotency_key` are not used (the source's model, and the
// record's position, stand for them). The same size limit applies; the
// caller then checks it as a Feedback is (ValidateFeedbackRequest).
absl::StatusOr<v1::FeedbackRequest> ParseKafkaFeedbackRecord(KafkaFormat format,
                                                             std::string_view bytes,
                                                             const Limits& limits);

}  // namespace clickd

#endif  // CLICKD_KAFKA_KAFKA_RECORD_H_
