#include "client/clickctl/feedback_command.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/clickctl/feedback_items.h"
#include "client/clickctl/network_flags.h"
#include "client/clickctl/response_json.h"

ABSL_FLAG(std::optional<uint64_t>, impression_id, std::nullopt,
          "feedback: the impression to label (Prediction.impression_id, in decimal)");
ABSL_FLAG(std::optional<int64_t>, event_time_unix_micros, std::nullopt,
          "feedback: when the click happened, microseconds since the Unix epoch (default: now)");
ABSL_FLAG(std::string, input, "",
          "feedback: a file of \"impression_id label [importance]\" lines, or - for stdin");
ABSL_DECLARE_FLAG(std::optional<double>, label);       // network_commands.cc
ABSL_DECLARE_FLAG(std::optional<double>, importance);  // network_commands.cc
ABSL_DECLARE_FLAG(std::string, request_id);            // network_commands.cc
ABSL_DECLARE_FLAG(int, batch_size);                    // server_replay.cc

namespace clickd {
namespace {

constexpr absl::Duration kCallDeadline = absl::Seconds(10);
const char kCommand[] = "feedback";

// The one item of the flag form.
absl::StatusOr<v1::FeedbackItem> ItemFromFlags() {
  const std::optional<double> label = absl::GetFlag(FLAGS_label);
  if (!label.has_value()) {
    return absl::InvalidArgumentError("give --impression_id with --label, or --input");
  }
  v1::FeedbackItem item;
  item.set_impression_id(*absl::GetFlag(FLAGS_impression_id));
  item.set_label(static_cast<float>(*label));
  if (auto importance = absl::GetFlag(FLAGS_importance); importance.has_value()) {
    item.set_importance(static_cast<float>(*importance));
  }
  if (auto time = absl::GetFlag(FLAGS_event_time_unix_micros); time.has_value()) {
    if (*time < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--event_time_unix_micros is ", *time, "; must be >= 0 (0: now)"));
    }
    item.set_event_time_unix_micros(*time);
  }
  if (absl::Status s = CheckFeedbackItem(item, "--label/--importance"); !s.ok()) return s;
  return item;
}

// Checks the flags; returns the flag form's item, or nothing with --input.
absl::StatusOr<std::optional<v1::FeedbackItem>> CheckFeedbackFlags() {
  std::set<std::string> used = NetworkFlagNames();
  const std::set<std::string> own = FeedbackCommandFlagNames();
  used.insert(own.begin(), own.end());
  if (absl::Status s = CheckFlagsApply(kCommand, used); !s.ok()) return s;
  if (absl::GetFlag(FLAGS_batch_size) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch_size is ", absl::GetFlag(FLAGS_batch_size), "; must be >= 1"));
  }
  const bool from_flags = absl::GetFlag(FLAGS_impression_id).has_value();
  if (absl::GetFlag(FLAGS_input).empty()) {
    if (!from_flags)
      return absl::InvalidArgumentError("give --impression_id and --label, or --input");
    return ItemFromFlags();
  }
  if (from_flags || absl::GetFlag(FLAGS_label).has_value() ||
      absl::GetFlag(FLAGS_importance).has_value() ||
      absl::GetFlag(FLAGS_event_time_unix_micros).has_value()) {
    return absl::InvalidArgumentError(
        "--input excludes --impression_id, --label, --importance and --event_time_unix_micros "
        "(each line carries its own)");
  }
  return std::nullopt;
}

// Sends requests and prints their items' statuses; remembers what was
// answered, for the summary and for a stop.
class FeedbackSender {
 public:
  FeedbackSender(const ClickdClient& client, size_t batch_size)
      : client_(client), batch_size_(batch_size) {
    request_.set_model(ModelFlag());
    request_.set_request_id(absl::GetFlag(FLAGS_request_id));
  }

  // Queues an item, sending the request once it holds batch_size items.
  absl::Status Add(v1::FeedbackItem item) {
    *request_.add_items() = std::move(item);
    if (static_cast<size_t>(request_.items_size()) < batch_size_) return absl::OkStatus();
    return Flush();
  }

  // Sends the queued items, if any.
  absl::Status Flush() {
    if (request_.items_size() == 0) return absl::OkStatus();
    absl::StatusOr<v1::FeedbackResponse> response = client_.Feedback(request_);
    if (!response.ok()) return response.status();
    ++requests_;
    tally_.Add(*response);
    Print(*response);
    request_.clear_items();
    return absl::OkStatus();
  }

  // The last line: what every answered request's items became.
  void PrintSummary() const {
    if (JsonFlag()) {
      std::printf("%s\n", JsonWriter()
                              .String("model", request_.model())
                              .Integer("requests", requests_)
                              .Integer("items", tally_.items())
                              .Object("statuses", tally_.Json())
                              .Finish()
                              .c_str());
    } else {
      std::printf("model %s: %llu items in %llu requests: %s\n", request_.model().c_str(),
                  static_cast<unsigned long long>(tally_.items()),
                  static_cast<unsigned long long>(requests_), tally_.Text().c_str());
    }
  }

  // Reports a stop after the answered requests: exit code 1.
  int ReportStopped(const absl::Status& error) const {
    const std::string code = absl::StatusCodeToString(error.code());
    std::cerr << "clickctl " << kCommand << ": " << code << ": " << error.message() << " ("
              << tally_.items() << " items answered)\n";
    if (JsonFlag()) {
      std::printf("%s\n", JsonWriter()
                              .String("error", std::string(error.message()))
                              .String("code", code)
                              .Integer("items_answered", tally_.items())
                              .Finish()
                              .c_str());
    }
    return 1;
  }

 private:
  // One line per request with --json, one per item otherwise.
  void Print(const v1::FeedbackResponse& response) const {
    std::vector<std::string> items;
    for (int i = 0; i < request_.items_size(); ++i) {
      const std::string id = absl::StrCat(request_.items(i).impression_id());
      const std::string status =
          i < response.statuses_size()
              ? FeedbackStatusName(static_cast<v1::FeedbackStatus>(response.statuses(i)))
              : "MISSING";
      if (JsonFlag()) {
        // A string: a uint64 above 2^53 does not survive a JSON reader's double.
        items.push_back(JsonWriter().String("impression_id", id).String("status", status).Finish());
      } else {
        std::printf("%s %s\n", id.c_str(), status.c_str());
      }
    }
    if (!JsonFlag()) return;
    std::printf("%s\n", JsonWriter()
                            .String("request_id", response.request_id())
                            .Integer("joined", response.joined())
                            .Integer("model_version", response.model_version())
                            .Object("items", JsonArray(items))
                            .Finish()
                            .c_str());
  }

  const ClickdClient& client_;
  const size_t batch_size_;
  v1::FeedbackRequest request_;
  FeedbackTally tally_;
  uint64_t requests_ = 0;
};

// Sends the lines of `in`, stopping at the first that does not parse after
// sending the items before it. Bounded by the input's length.
int SendLines(std::istream& in, const std::string& name, FeedbackSender& sender) {
  std::string line;
  for (uint64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto item = ParseFeedbackLine(line, absl::StrCat(name, ":", number));
    if (!item.ok()) {
      if (absl::Status s = sender.Flush(); !s.ok()) return sender.ReportStopped(s);
      return sender.ReportStopped(item.status());
    }
    if (absl::Status s = sender.Add(*std::move(item)); !s.ok()) return sender.ReportStopped(s);
  }
  if (absl::Status s = sender.Flush(); !s.ok()) return sender.ReportStopped(s);
  sender.PrintSummary();
  return 0;
}

}  // namespace

std::set<std::string> FeedbackCommandFlagNames() {
  return {"impression_id", "label",      "importance", "event_time_unix_micros",
          "input",         "batch_size", "request_id"};
}

int RunFeedbackCommand(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return UsageError(kCommand, absl::InvalidArgumentError(
                                    absl::StrCat("unexpected argument \"", args[0], "\"")));
  }
  auto item = CheckFeedbackFlags();
  if (!item.ok()) return UsageError(kCommand, item.status());
  auto deadline = DeadlineFromFlags(kCallDeadline);
  if (!deadline.ok()) return UsageError(kCommand, deadline.status());
  auto client = ClientFromFlags(*deadline);
  if (!client.ok()) return UsageError(kCommand, client.status());
  FeedbackSender sender(**client, static_cast<size_t>(absl::GetFlag(FLAGS_batch_size)));
  if (item->has_value()) {
    if (absl::Status s = sender.Add(**item); !s.ok()) return ReportError(kCommand, s);
    if (absl::Status s = sender.Flush(); !s.ok()) return ReportError(kCommand, s);
    sender.PrintSummary();
    return 0;
  }
  const std::string input = absl::GetFlag(FLAGS_input);
  if (input == "-") return SendLines(std::cin, "stdin", sender);
  std::ifstream file(input);
  if (!file) return ReportError(kCommand, absl::NotFoundError(absl::StrCat("cannot open ", input)));
  return SendLines(file, input, sender);
}

}  // namespace clickd
