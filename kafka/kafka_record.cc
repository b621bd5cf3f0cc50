#include "kafka/kafka_record.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/formats/parse.h"
#include "google/protobuf/util/json_util.h"
#include "wire/example_proto.h"

namespace clickd {

namespace {

absl::Status CheckRecordSize(std::string_view bytes, const Limits& limits) {
  if (bytes.size() > static_cast<size_t>(limits.max_message_bytes)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the record has ", bytes.size(), " bytes; the limit is ",
                     limits.max_message_bytes, " (--max_message_bytes)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::FeedbackRequest> ParseKafkaFeedbackRecord(KafkaFormat format,
                                                             std::string_view bytes,
                                                             const Limits& limits) {
  if (absl::Status s = CheckRecordSize(bytes, limits); !s.ok()) return s;
  v1::FeedbackRequest request;
  switch (format) {
    case KafkaFormat::kJson: {
      const auto parsed = google::protobuf::util::JsonStringToMessage(
          google::protobuf::StringPiece(bytes.data(), bytes.size()), &request);
      if (!parsed.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("not a clickd.v1.FeedbackRequest in JSON: ",
                                                       std::string(parsed.message())));
      }
      return request;
    }
    case KafkaFormat::kProto:
      if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        return absl::InvalidArgumentError("not a clickd.v1.FeedbackRequest in protobuf bytes");
      }
      return request;
    case KafkaFormat::kVw:
      break;
  }
  return absl::InvalidArgumentError("a feedback topic's records are json or proto");
}

absl::StatusOr<v1::UpdateRequest> ParseKafkaRecord(KafkaFormat format, std::string_view bytes,
                                                   const Limits& limits) {
  if (absl::Status s = CheckRecordSize(bytes, limits); !s.ok()) return s;
  v1::UpdateRequest request;
  switch (format) {
    case KafkaFormat::kVw: {
      std::string_view line = bytes;
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
      if (line.find('\n') != std::string_view::npos) {
        return absl::InvalidArgumentError("a vw record holds one line; this one holds several");
      }
      LabeledExample example;
      if (absl::Status s = ParseLine(InputFormat::kVw, line, &example); !s.ok()) return s;
      LabeledExampleToProto(example, request.add_examples());
      return request;
    }
    case KafkaFormat::kJson: {
      const auto parsed = google::protobuf::util::JsonStringToMessage(
          google::protobuf::StringPiece(bytes.data(), bytes.size()), &request);
      if (!parsed.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("not a clickd.v1.UpdateRequest in JSON: ", std::string(parsed.message())));
      }
      return request;
    }
    case KafkaFormat::kProto:
      if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        return absl::InvalidArgumentError("not a clickd.v1.UpdateRequest in protobuf bytes");
      }
      return request;
  }
  return absl::InvalidArgumentError("unknown kafka format");
}

}  // namespace clickd
