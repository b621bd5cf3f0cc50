// The checks of a model's Kafka source config (model_config.h).
#include <string>

#include "absl/strings/str_cat.h"
#include "core/model/model_config.h"

namespace clickd {
namespace {

// Printable ASCII without spaces: what a broker list, a group and a path
// hold here, so that none can smuggle a second librdkafka setting.
absl::Status CheckPrintable(std::string_view value, std::string_view field, size_t limit) {
  if (value.size() > limit) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(field), " has ", value.size(), " bytes; the limit is ", limit));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const unsigned char c = value[i];
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(field), " has byte ",
                                                     static_cast<int>(c), " at offset ", i,
                                                     "; only printable ASCII (0x21-0x7e)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view KafkaFormatName(KafkaFormat format) {
  switch (format) {
    case KafkaFormat::kVw:
      return "vw";
    case KafkaFormat::kJson:
      return "json";
    case KafkaFormat::kProto:
      return "proto";
  }
  return "unknown";
}

absl::StatusOr<KafkaFormat> ParseKafkaFormat(std::string_view name) {
  if (name == "vw") return KafkaFormat::kVw;
  if (name == "json") return KafkaFormat::kJson;
  if (name == "proto") return KafkaFormat::kProto;
  return absl::InvalidArgumentError(
      absl::StrCat("kafka.format is \"", std::string(name), "\"; must be vw, json or proto"));
}

absl::Status ValidateKafkaSourceConfig(const KafkaSourceConfig& k) {
  if (!k.enabled()) {
    if (!k.topic.empty() || !k.group.empty() || !k.security_protocol.empty() ||
        !k.ssl_ca_location.empty() || !k.dead_letter_topic.empty() ||
        k.format != KafkaFormat::kVw || k.has_version16_fields()) {
      return absl::InvalidArgumentError(
          "kafka.brokers is empty but other kafka fields are set; a Kafka source needs brokers");
    }
    return absl::OkStatus();
  }
  if (absl::Status s = CheckPrintable(k.brokers, "kafka.brokers", kMaxKafkaBrokersBytes); !s.ok()) {
    return s;
  }
  if (k.topic.empty())
    return absl::InvalidArgumentError("kafka.topic is empty; a source needs one");
  if (k.topic.size() > kMaxKafkaTopicBytes) {
    return absl::InvalidArgumentError(absl::StrCat("kafka.topic has ", k.topic.size(),
                                                   " bytes; the limit is ", kMaxKafkaTopicBytes));
  }
  if (absl::Status s = ValidateNameChars(k.topic, "kafka.topic", kMaxKafkaTopicBytes); !s.ok()) {
    return s;
  }
  if (!k.dead_letter_topic.empty()) {
    if (k.dead_letter_topic.size() > kMaxKafkaTopicBytes) {
      return absl::InvalidArgumentError(absl::StrCat("kafka.dead_letter_topic has ",
                                                     k.dead_letter_topic.size(),
                                                     " bytes; the limit is ", kMaxKafkaTopicBytes));
    }
    if (absl::Status s =
            ValidateNameChars(k.dead_letter_topic, "kafka.dead_letter_topic", kMaxKafkaTopicBytes);
        !s.ok()) {
      return s;
    }
    if (k.dead_letter_topic == k.topic) {
      return absl::InvalidArgumentError(
          "kafka.dead_letter_topic is kafka.topic; refused records would be read again");
    }
  }
  if (!k.feedback_topic.empty()) {
    if (k.feedback_topic.size() > kMaxKafkaTopicBytes) {
      return absl::InvalidArgumentError(absl::StrCat("kafka.feedback_topic has ",
                                                     k.feedback_topic.size(),
                                                     " bytes; the limit is ", kMaxKafkaTopicBytes));
    }
    if (absl::Status s =
            ValidateNameChars(k.feedback_topic, "kafka.feedback_topic", kMaxKafkaTopicBytes);
        !s.ok()) {
      return s;
    }
    if (k.feedback_topic == k.topic || k.feedback_topic == k.dead_letter_topic) {
      return absl::InvalidArgumentError(
          absl::StrCat("kafka.feedback_topic is kafka.",
                       k.feedback_topic == k.topic ? "topic" : "dead_letter_topic",
                       "; the feedback topic must be a topic of its own"));
    }
  }
  if (k.feedback_format != KafkaFormat::kJson && k.feedback_format != KafkaFormat::kProto) {
    return absl::InvalidArgumentError(
        absl::StrCat("kafka.feedback_format is ", std::string(KafkaFormatName(k.feedback_format)),
                     "; must be json or proto (a clickd.v1.FeedbackRequest)"));
  }
  if (k.feedback_topic.empty() && k.feedback_format != KafkaFormat::kJson) {
    return absl::InvalidArgumentError("kafka.feedback_format is set without kafka.feedback_topic");
  }
  if (absl::Status s = CheckPrintable(k.group, "kafka.group", kMaxKafkaGroupBytes); !s.ok()) {
    return s;
  }
  if (k.format != KafkaFormat::kVw && k.format != KafkaFormat::kJson &&
      k.format != KafkaFormat::kProto) {
    return absl::InvalidArgumentError(absl::StrCat("kafka.format is ", static_cast<int>(k.format),
                                                   "; must be vw, json or proto"));
  }
  if (!k.security_protocol.empty() && k.security_protocol != "plaintext" &&
      k.security_protocol != "ssl" && k.security_protocol != "sasl_plaintext" &&
      k.security_protocol != "sasl_ssl") {
    return absl::InvalidArgumentError(
        absl::StrCat("kafka.security_protocol is \"", k.security_protocol,
                     "\"; must be plaintext, ssl, sasl_plaintext or sasl_ssl"));
  }
  const bool sasl = k.security_protocol.starts_with("sasl_");
  if (sasl) {
    if (k.sasl_mechanism != "PLAIN" && k.sasl_mechanism != "SCRAM-SHA-256" &&
        k.sasl_mechanism != "SCRAM-SHA-512") {
      return absl::InvalidArgumentError(
          absl::StrCat("kafka.sasl_mechanism is \"", k.sasl_mechanism, "\"; with ",
                       k.security_protocol, " it must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"));
    }
    if (k.sasl_credentials_file.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kafka.sasl_credentials_file is empty; ", k.security_protocol,
          " needs the file holding the username and password (never the secret itself)"));
    }
  } else if (!k.sasl_mechanism.empty() || !k.sasl_credentials_file.empty()) {
    return absl::InvalidArgumentError(
        "kafka.sasl_mechanism and kafka.sasl_credentials_file need kafka.security_protocol "
        "sasl_plaintext or sasl_ssl");
  }
  if (absl::Status s = CheckPrintable(k.sasl_credentials_file, "kafka.sasl_credentials_file",
                                      kMaxKafkaPathBytes);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckPrintable(k.ssl_ca_location, "kafka.ssl_ca_location", kMaxKafkaPathBytes);
      !s.ok()) {
    return s;
  }
  return absl::OkStatus();
}

}  // namespace clickd
