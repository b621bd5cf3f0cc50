#include "client/clickctl/delayed_click_replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/clickctl/feedback_items.h"
#include "client/clickctl/json_writer.h"
#include "client/clickctl/network_flags.h"
#include "client/clickctl/response_json.h"

ABSL_FLAG(bool, delayed_clicks, false,
          "replay --server: replay through Predict with log_impressions and a Feedback per "
          "click after a random delay, instead of UpdateStreamAcked (needs a model with "
          "--feedback_ttl_seconds)");
ABSL_FLAG(double, click_delay_mean_seconds, 60,
          "replay --delayed_clicks: mean of the exponential click delay, in simulated seconds");
ABSL_FLAG(double, time_scale, 1,
          "replay --delayed_clicks: simulated seconds per real second (60: a simulated minute "
          "passes in a real second)");
ABSL_FLAG(int64_t, max_pending_clicks, 100000,
          "replay --delayed_clicks: most clicks waiting for their delay; a full queue holds the "
          "replay until the earliest is due");
ABSL_FLAG(uint64_t, click_delay_seed, 1, "replay --delayed_clicks: seed of the click delays");
ABSL_DECLARE_FLAG(int, batch_size);          // server_replay.cc
ABSL_DECLARE_FLAG(uint64_t, skip_examples);  // server_replay.cc
ABSL_DECLARE_FLAG(uint64_t, max_examples);   // replay_command.cc
ABSL_DECLARE_FLAG(bool, skip_bad_lines);     // replay_command.cc

namespace clickd {

void PendingClicks::Add(v1::FeedbackItem item, Time due) {
  queue_.push(Pending{due, added_++, std::move(item)});
}

std::vector<v1::FeedbackItem> PendingClicks::TakeDue(Time now, size_t max_items) {
  std::vector<v1::FeedbackItem> due;
  while (!queue_.empty() && queue_.top().due <= now && due.size() < max_items) {
    due.push_back(queue_.top().item);
    queue_.pop();
  }
  return due;
}

double ExponentialDelaySeconds(double mean, uint64_t random) {
  const double u = static_cast<double>(random >> 11) * 0x1.0p-53;
  return -mean * std::log1p(-u);
}

std::set<std::string> DelayedClickFlagNames() {
  return {"delayed_clicks", "click_delay_mean_seconds", "time_scale", "max_pending_clicks",
          "click_delay_seed"};
}

absl::StatusOr<DelayedClickOptions> DelayedClickOptionsFromFlags() {
  DelayedClickOptions o;
  o.click_delay_mean_seconds = absl::GetFlag(FLAGS_click_delay_mean_seconds);
  if (!std::isfinite(o.click_delay_mean_seconds) || o.click_delay_mean_seconds < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--click_delay_mean_seconds is ",
                                                   o.click_delay_mean_seconds,
                                                   "; must be finite and >= 0 (0: no delay)"));
  }
  o.time_scale = absl::GetFlag(FLAGS_time_scale);
  if (!std::isfinite(o.time_scale) || o.time_scale <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--time_scale is ", o.time_scale, "; must be finite and > 0"));
  }
  const int64_t pending = absl::GetFlag(FLAGS_max_pending_clicks);
  if (pending < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_pending_clicks is ", pending, "; must be >= 1"));
  }
  o.max_pending_clicks = static_cast<size_t>(pending);
  o.batch_size = static_cast<size_t>(absl::GetFlag(FLAGS_batch_size));
  o.seed = absl::GetFlag(FLAGS_click_delay_seed);
  o.range = {absl::GetFlag(FLAGS_skip_examples), absl::GetFlag(FLAGS_max_examples)};
  o.skip_bad_lines = absl::GetFlag(FLAGS_skip_bad_lines);
  return o;
}

namespace {

const char kCommand[] = "replay --server --delayed_clicks";
using Clock = std::chrono::steady_clock;

// One replay: its counts, its queue and its calls.
class DelayedClickReplay {
 public:
  DelayedClickReplay(const ClickdClient& client, const v1::ModelInfo& model,
                     const DelayedClickOptions& options)
      : client_(client),
        model_(model.config().name()),
        options_(options),
        random_(options.seed),
        start_(Clock::now()),
        deadline_(start_ + absl::ToChronoNanoseconds(options.deadline)) {}

  // Replays every usable example, then sends the clicks still pending.
  // Returns the first error: a call's, an unusable line's or the deadline's.
  absl::Status Run(UsableExamples& examples) {
    LabeledExample example;
    for (;;) {  // bounded by the file's length and by deadline_
      absl::StatusOr<bool> more = examples.Next(&example);
      if (!more.ok()) return more.status();
      if (!*more) break;
      if (Clock::now() > deadline_) {
        return absl::DeadlineExceededError(
            "the replay's deadline (--deadline_ms, default 600000) passed");
      }
      if (absl::Status s = SendDue(); !s.ok()) return s;
      while (pending_.size() >= options_.max_pending_clicks) {
        ++full_queue_waits_;
        if (absl::Status s = WaitForEarliest(); !s.ok()) return s;
      }
      if (absl::Status s = Impression(example); !s.ok()) return s;
    }
    while (!pending_.empty()) {
      if (absl::Status s = WaitForEarliest(); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // The summary line's fields, in the order printed.
  void AddSummary(JsonWriter* w) const {
    w->String("model", model_)
        .Integer("examples", examples_)
        .Integer("impressions_logged", impressions_)
        .Integer("clicks", clicks_)
        .Integer("clicks_sent", clicks_sent_)
        .Integer("clicks_pending", pending_.size())
        .Integer("feedback_requests", feedback_requests_)
        .Object("statuses", tally_.Json())
        .Integer("full_queue_waits", full_queue_waits_)
        .Integer("max_pending", max_pending_)
        .Integer("model_version", model_version_)
        .Number("seconds", std::chrono::duration<double>(Clock::now() - start_).count());
  }

  std::string Text() const {
    return absl::StrCat(impressions_, " impressions logged, ", clicks_sent_, " of ", clicks_,
                        " clicks sent in ", feedback_requests_, " Feedback requests (",
                        tally_.Text(), "); ", full_queue_waits_, " waits on a full queue");
  }

 private:
  // Scores the example as the one candidate of a Predict that logs it, and
  // queues its click, if any.
  absl::Status Impression(const LabeledExample& example) {
    ++examples_;
    v1::LabeledExample labeled;
    ToProto(example, &labeled);
    v1::PredictRequest request;
    request.set_model(model_);
    request.set_log_impressions(true);
    *request.add_candidates() = std::move(*labeled.mutable_example());
    absl::StatusOr<v1::PredictResponse> response = client_.Predict(request);
    if (!response.ok()) return response.status();
    if (response->predictions_size() != 1) {
      return absl::InternalError(absl::StrCat("Predict returned ", response->predictions_size(),
                                              " predictions for 1 candidate"));
    }
    ++impressions_;
    model_version_ = response->model_version();
    if (example.label <= 0) return absl::OkStatus();  // 0 or -1: no click
    ++clicks_;
    v1::FeedbackItem click;
    click.set_impression_id(response->predictions(0).impression_id());
    click.set_label(1);
    if (labeled.has_importance()) click.set_importance(labeled.importance());
    const double simulated = ExponentialDelaySeconds(options_.click_delay_mean_seconds, random_());
    const auto real = std::chrono::duration<double>(simulated / options_.time_scale);
    pending_.Add(std::move(click),
                 Clock::now() + std::chrono::duration_cast<Clock::duration>(real));
    max_pending_ = std::max<uint64_t>(max_pending_, pending_.size());
    return absl::OkStatus();
  }

  // Sends every click due now, in requests of at most batch_size items.
  absl::Status SendDue() {
    for (;;) {  // each round takes at least one click off a finite queue
      std::vector<v1::FeedbackItem> due = pending_.TakeDue(Clock::now(), options_.batch_size);
      if (due.empty()) return absl::OkStatus();
      v1::FeedbackRequest request;
      request.set_model(model_);
      for (v1::FeedbackItem& item : due) *request.add_items() = std::move(item);
      absl::StatusOr<v1::FeedbackResponse> response = client_.Feedback(request);
      if (!response.ok()) return response.status();
      ++feedback_requests_;
      clicks_sent_ += request.items_size();
      tally_.Add(*response);
      model_version_ = std::max(model_version_, response->model_version());
    }
  }

  // Sleeps until the earliest pending click is due, then sends what is due.
  absl::Status WaitForEarliest() {
    const Clock::time_point due = pending_.EarliestDue();
    if (due > deadline_) {
      return absl::DeadlineExceededError(
          absl::StrCat("the replay's deadline (--deadline_ms, default 600000) passes before the "
                       "next click is due; ",
                       pending_.size(), " clicks pending (raise --time_scale?)"));
    }
    const Clock::time_point now = Clock::now();
    if (due > now) absl::SleepFor(absl::FromChrono(due - now));
    return SendDue();
  }

  const ClickdClient& client_;
  const std::string model_;
  const DelayedClickOptions options_;
  std::mt19937_64 random_;  // a fixed algorithm: the same delays everywhere
  const Clock::time_point start_;
  const Clock::time_point deadline_;
  PendingClicks pending_;
  FeedbackTally tally_;
  uint64_t examples_ = 0, impressions_ = 0, clicks_ = 0, clicks_sent_ = 0;
  uint64_t feedback_requests_ = 0, full_queue_waits_ = 0, max_pending_ = 0, model_version_ = 0;
};

}  // namespace

int RunDelayedClickReplay(const ClickdClient& client, ExampleReader& reader,
                          const std::string& path, const v1::ModelInfo& model,
                          const DelayedClickOptions& options) {
  const std::string& name = model.config().name();
  if (model.config().feedback().ttl_seconds() <= 0) {
    return ReportError(kCommand, absl::FailedPreconditionError(absl::StrCat(
                                     "model \"", name,
                                     "\" has no impression-to-click loop (create it with "
                                     "--create_model --feedback_ttl_seconds=...)")));
  }
  auto loss = ParseLossType(model.config().loss());
  if (!loss.ok()) return ReportError(kCommand, loss.status());
  UsableExamples examples(reader, path, *loss, options.range, options.skip_bad_lines);
  DelayedClickReplay replay(client, model, options);
  const absl::Status status = replay.Run(examples);
  for (const std::string& e : examples.skipped_errors()) std::cerr << "skipped: " << e << "\n";
  JsonWriter summary;
  replay.AddSummary(&summary);
  summary.Integer("skipped_lines", examples.skipped_lines());
  if (!status.ok()) {
    const std::string code = absl::StatusCodeToString(status.code());
    std::cerr << "clickctl " << kCommand << ": " << code << ": " << status.message() << " ("
              << replay.Text() << ")\n";
    if (JsonFlag()) {
      summary.String("error", std::string(status.message())).String("code", code);
      std::printf("%s\n", summary.Finish().c_str());
    }
    return 1;
  }
  absl::StatusOr<v1::ModelInfo> after = client.GetModel(name);
  if (!after.ok()) return ReportError(kCommand, after.status());
  std::printf("%s\n", replay.Text().c_str());
  std::printf("model %s after: %llu updates, logloss %.5f, auc %.5f over %llu examples\n",
              name.c_str(), static_cast<unsigned long long>(after->updates()),
              after->metrics().logloss(), after->metrics().auc(),
              static_cast<unsigned long long>(after->metrics().examples()));
  if (!JsonFlag()) return 0;
  JsonWriter metrics;
  AddMetricsJson(after->metrics(), &metrics);
  summary.Integer("updates", after->updates()).Object("model_metrics", metrics.Finish());
  std::printf("%s\n", summary.Finish().c_str());
  return 0;
}

}  // namespace clickd
