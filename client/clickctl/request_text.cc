#include "client/clickctl/request_text.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"

namespace clickd {
namespace {

absl::Status Error(const std::string& flag, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", what));
}

// Parses "key[:value]" into *feature.
absl::Status ParseFeature(absl::string_view text, const std::string& flag, v1::Feature* feature) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() > 2) {
    return Error(flag, absl::StrCat("feature \"", text, "\" has more than one ':'"));
  }
  const absl::string_view key = parts[0];
  if (key.empty()) return Error(flag, absl::StrCat("feature \"", text, "\" has an empty name"));
  if (key[0] == '#') {
    uint64_t id = 0;
    if (!absl::SimpleAtoi(key.substr(1), &id)) {
      return Error(flag, absl::StrCat("feature \"", text, "\": \"", key.substr(1),
                                      "\" after '#' is not a 64-bit unsigned id"));
    }
    feature->set_id(id);
  } else {
    feature->set_name(std::string(key));
  }
  if (parts.size() == 2) {
    float value = 0;
    if (!absl::SimpleAtof(parts[1], &value) || !std::isfinite(value)) {
      return Error(flag, absl::StrCat("feature \"", text, "\": value \"", parts[1],
                                      "\" is not a finite number"));
    }
    feature->set_value(value);
  }
  return absl::OkStatus();
}

// Parses "NS|f1,f2:0.5" into *ns.
absl::Status ParseNamespace(absl::string_view text, const std::string& flag, v1::Namespace* ns) {
  const size_t bar = text.find('|');
  if (bar == absl::string_view::npos) {
    return Error(flag, absl::StrCat("\"", text, "\" has no '|'; write NAMESPACE|FEATURE,..."));
  }
  ns->set_name(std::string(text.substr(0, bar)));
  const absl::string_view features = text.substr(bar + 1);
  if (features.empty()) {
    return Error(flag, absl::StrCat("namespace \"", ns->name(), "\" has no features"));
  }
  if (features.find('|') != absl::string_view::npos) {
    return Error(flag, absl::StrCat("\"", text,
                                    "\" has a second '|'; separate namespaces with "
                                    "a space"));
  }
  for (absl::string_view f : absl::StrSplit(features, ',')) {
    if (absl::Status s = ParseFeature(f, flag, ns->add_features()); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::Example> ParseExampleText(const std::string& text, const std::string& flag) {
  v1::Example example;
  for (absl::string_view token :
       absl::StrSplit(text, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
    if (absl::Status s = ParseNamespace(token, flag, example.add_namespaces()); !s.ok()) return s;
  }
  return example;
}

absl::StatusOr<std::vector<v1::Example>> ParseCandidatesText(const std::string& text,
                                                             const std::string& flag) {
  std::vector<v1::Example> candidates;
  int index = 0;
  for (absl::string_view part : absl::StrSplit(text, ';')) {
    const std::string item_flag = absl::StrCat(flag, " candidate ", index++);
    if (absl::StripAsciiWhitespace(part).empty()) {
      return Error(item_flag, "is empty");
    }
    auto example = ParseExampleText(std::string(part), item_flag);
    if (!example.ok()) return example.status();
    candidates.push_back(*std::move(example));
  }
  return candidates;
}

absl::Status ParseJsonMessage(const std::string& text, const std::string& flag,
                              google::protobuf::Message* message) {
  std::string json;
  if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(text), "{")) {
    json = text;
  } else {
    std::ifstream in(text);
    if (!in) {
      return absl::NotFoundError(
          absl::StrCat(flag, ": cannot open \"", text, "\" (inline JSON must start with '{')"));
    }
    std::stringstream contents;
    contents << in.rdbuf();
    json = contents.str();
  }
  const auto status = google::protobuf::util::JsonStringToMessage(json, message);
  if (!status.ok()) {
    return Error(flag, absl::StrCat("not a ", message->GetTypeName(),
                                    " in JSON: ", std::string(status.message())));
  }
  return absl::OkStatus();
}

std::string ToJsonLine(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;  // show defaults: bits 0, seed 0
  std::string json;
  // Printing fails only for Any fields whose type is unknown; clickd has none.
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) return "{}";
  return json;
}

}  // namespace clickd
