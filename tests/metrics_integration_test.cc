// The real clickd's /metrics endpoint: every RPC counted with its status
// code (failures included), the per-model series following models created
// and deleted at runtime, and an exposition that Prometheus' own linter,
// `promtool check metrics`, accepts without a complaint.
//
// Each test starts its own server on free ports of 127.0.0.1
// (tests/server_process.h) and stops it by PID. Every wait is bounded.
#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>
#include <httplib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clickd/v1/clickd.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/server_process.h"
#include "tests/test_util.h"

namespace clickd {
namespace {

using ::clickd::testing::FindFreePort;
using ::clickd::testing::RunClickd;
using ::clickd::testing::ServerOptions;
using ::clickd::testing::ServerProcess;
using std::chrono::milliseconds;
using std::chrono::seconds;

// See server_integration_test.cc: lets a graceful stop finish quickly.
const bool kFastIdlePolling =
    setenv("GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS", "50", /*overwrite=*/0) == 0;

constexpr char kPromtool[] = "/usr/bin/promtool";

// A clickd with its /metrics endpoint on a free port.
struct MetricsServer {
  std::unique_ptr<ServerProcess> process;
  int metrics_port = 0;
};

MetricsServer StartWithMetrics(std::vector<std::string> extra_flags = {}) {
  MetricsServer server;
  auto port = FindFreePort();
  EXPECT_TRUE(port.ok()) << port.status();
  if (!port.ok()) return server;
  server.metrics_port = *port;
  ServerOptions options;
  options.flags = {absl::StrCat("--metrics_port=", *port)};
  options.flags.insert(options.flags.end(), extra_flags.begin(), extra_flags.end());
  auto process = ServerProcess::Start(options);
  EXPECT_TRUE(process.ok()) << process.status();
  if (process.ok()) server.process = *std::move(process);
  return server;
}

// GET /metrics; the body, or "" with a test failure.
std::string Scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(10);
  auto response = client.Get("/metrics");
  EXPECT_TRUE(response) << "GET /metrics: " << httplib::to_string(response.error());
  if (!response) return "";
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  return response->body;
}

// The value of the sample line `series` ("name{labels}" exactly as the
// server prints it, labels in name order), or nullopt if there is none.
std::optional<double> Sample(const std::string& body, const std::string& series) {
  const std::string prefix = series + " ";
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) == 0) return std::stod(line.substr(prefix.size()));
  }
  return std::nullopt;
}

std::string Requests(const std::string& method, const std::string& code) {
  return absl::StrCat("clickd_requests_total{code=\"", code, "\",method=\"", method, "\"}");
}

// Runs `promtool check metrics` on `exposition`: its exit code and output.
std::pair<int, std::string> Promtool(const std::string& exposition) {
  char path[] = "/tmp/clickd_metrics_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return {-1, "mkstemp failed"};
  close(fd);
  std::ofstream(path) << exposition;
  const ::clickd::testing::CommandResult result = ::clickd::testing::RunCommand(
      absl::StrCat(kPromtool, " check metrics < ", path, " 2>&1"), absl::Seconds(60));
  std::remove(path);
  return {result.exit_code, result.out};
}

// ---------------------------------------------------------------------------
// Requests

v1::Example ExampleOf(const std::string& ns, const std::vector<std::string>& features) {
  v1::Example e;
  v1::Namespace* n = e.add_namespaces();
  n->set_name(ns);
  for (const std::string& f : features) n->add_features()->set_name(f);
  return e;
}

v1::UpdateRequest UpdateOf(const std::string& model, int count) {
  v1::UpdateRequest r;
  r.set_model(model);
  for (int i = 0; i < count; ++i) {
    v1::LabeledExample* le = r.add_examples();
    *le->mutable_example() = ExampleOf("ad", {absl::StrCat("a", i % 3)});
    le->set_label(i % 2 == 0 ? 1.0f : 0.0f);
  }
  return r;
}

void SetDeadline(grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() + seconds(20));
}

grpc::Status Predict(v1::Clickd::Stub& stub, const std::string& model, int candidates) {
  v1::PredictRequest request;
  request.set_model(model);
  *request.mutable_context() = ExampleOf("user", {"country=FR"});
  for (int i = 0; i < candidates; ++i) {
    *request.add_candidates() = ExampleOf("ad", {absl::StrCat("a", i)});
  }
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::PredictResponse response;
  return stub.Predict(&context, request, &response);
}

grpc::Status Update(v1::Clickd::Stub& stub, const v1::UpdateRequest& request) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::UpdateResponse response;
  return stub.Update(&context, request, &response);
}

grpc::Status UpdateStream(v1::Clickd::Stub& stub, const std::vector<v1::UpdateRequest>& messages) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::UpdateStreamResponse response;
  auto stream = stub.UpdateStream(&context, &response);
  for (const v1::UpdateRequest& m : messages) {
    if (!stream->Write(m)) break;
  }
  stream->WritesDone();
  return stream->Finish();
}

grpc::Status CreateModel(v1::Clickd::Stub& stub, const std::string& name) {
  v1::CreateModelRequest request;
  request.mutable_config()->set_name(name);
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::CreateModelResponse response;
  return stub.CreateModel(&context, request, &response);
}

grpc::Status DeleteModel(v1::Clickd::Stub& stub, const std::string& name) {
  v1::DeleteModelRequest request;
  request.set_model(name);
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::DeleteModelResponse response;
  return stub.DeleteModel(&context, request, &response);
}

// A model with the impression-to-click loop: impressions wait an hour for
// their label in a join buffer of `max_buffer_bytes`.
grpc::Status CreateLoopModel(v1::Clickd::Stub& stub, const std::string& name,
                             uint64_t max_buffer_bytes) {
  v1::CreateModelRequest request;
  request.mutable_config()->set_name(name);
  request.mutable_config()->mutable_feedback()->set_ttl_seconds(3600);
  request.mutable_config()->mutable_feedback()->set_max_buffer_bytes(max_buffer_bytes);
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::CreateModelResponse response;
  return stub.CreateModel(&context, request, &response);
}

// A Predict of two candidates that logs them as impressions.
grpc::Status PredictLogged(v1::Clickd::Stub& stub, const std::string& model,
                           v1::PredictResponse* response) {
  v1::PredictRequest request;
  request.set_model(model);
  request.set_log_impressions(true);
  *request.mutable_context() = ExampleOf("user", {"country=FR"});
  for (int i = 0; i < 2; ++i) *request.add_candidates() = ExampleOf("ad", {absl::StrCat("a", i)});
  grpc::ClientContext context;
  SetDeadline(&context);
  return stub.Predict(&context, request, response);
}

// Feedback of clicks: (impression id, event time in microseconds, 0: now).
grpc::Status Feedback(v1::Clickd::Stub& stub, const std::string& model,
                      const std::vector<std::pair<uint64_t, int64_t>>& clicks,
                      v1::FeedbackResponse* response) {
  v1::FeedbackRequest request;
  request.set_model(model);
  for (const auto& [id, event_time_us] : clicks) {
    v1::FeedbackItem* item = request.add_items();
    item->set_impression_id(id);
    item->set_label(1);
    item->set_event_time_unix_micros(event_time_us);
  }
  grpc::ClientContext context;
  SetDeadline(&context);
  return stub.Feedback(&context, request, response);
}

int64_t UnixMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// ---------------------------------------------------------------------------

TEST(Metrics, CountsEveryCallAndPassesPromtool) {
  MetricsServer server = StartWithMetrics();
  ASSERT_NE(server.process, nullptr);
  EXPECT_NE(server.process->Output().find(absl::StrCat(
                "clickd: metrics on http://127.0.0.1:", server.metrics_port, "/metrics")),
            std::string::npos);
  {
    auto stub = server.process->NewStub();
    // Successes and failures of every kind the handlers produce.
    EXPECT_TRUE(Predict(*stub, "default", 3).ok());
    EXPECT_TRUE(Predict(*stub, "default", 2).ok());
    EXPECT_EQ(Predict(*stub, "nope", 1).error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(Predict(*stub, "default", 0).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_TRUE(Update(*stub, UpdateOf("default", 4)).ok());
    EXPECT_EQ(Update(*stub, UpdateOf("default", 0)).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_TRUE(UpdateStream(*stub, {UpdateOf("default", 5), UpdateOf("default", 5)}).ok());
    EXPECT_EQ(UpdateStream(*stub, {UpdateOf("default", 1), UpdateOf("other", 1)}).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_TRUE(CreateModel(*stub, "extra").ok());
    EXPECT_EQ(CreateModel(*stub, "extra").error_code(), grpc::StatusCode::ALREADY_EXISTS);
    EXPECT_EQ(DeleteModel(*stub, "absent").error_code(), grpc::StatusCode::NOT_FOUND);
  }
  const std::string body = Scrape(server.metrics_port);

  EXPECT_EQ(Sample(body, Requests("Predict", "OK")), 2);
  EXPECT_EQ(Sample(body, Requests("Predict", "NOT_FOUND")), 1);
  EXPECT_EQ(Sample(body, Requests("Predict", "INVALID_ARGUMENT")), 1);
  EXPECT_EQ(Sample(body, Requests("Update", "OK")), 1);
  EXPECT_EQ(Sample(body, Requests("Update", "INVALID_ARGUMENT")), 1);
  EXPECT_EQ(Sample(body, Requests("UpdateStream", "OK")), 1);
  EXPECT_EQ(Sample(body, Requests("UpdateStream", "INVALID_ARGUMENT")), 1);
  EXPECT_EQ(Sample(body, Requests("CreateModel", "OK")), 1);
  EXPECT_EQ(Sample(body, Requests("CreateModel", "ALREADY_EXISTS")), 1);
  EXPECT_EQ(Sample(body, Requests("DeleteModel", "NOT_FOUND")), 1);
  EXPECT_EQ(Sample(body, Requests("ListModels", "OK")), 0);  // exists before any call
  EXPECT_EQ(Sample(body, Requests("Predict", "UNAVAILABLE")), std::nullopt);

  // The histogram agrees with the counter; +Inf equals _count.
  const std::string predict_ok = "code=\"OK\",method=\"Predict\"";
  EXPECT_EQ(Sample(body, absl::StrCat("clickd_request_duration_seconds_count{", predict_ok, "}")),
            2);
  EXPECT_EQ(Sample(body, absl::StrCat("clickd_request_duration_seconds_bucket{", predict_ok,
                                      ",le=\"+Inf\"}")),
            2);
  EXPECT_GT(*Sample(body, absl::StrCat("clickd_request_duration_seconds_sum{", predict_ok, "}")),
            0);
  EXPECT_NE(body.find(absl::StrCat("clickd_request_duration_seconds_bucket{", predict_ok,
                                   ",le=\"2.5e-05\"}")),
            std::string::npos);

  // Per model: 5 candidates scored; 4 + 10 + 1 examples learned (the
  // stream's first message was applied before its second was refused).
  EXPECT_EQ(Sample(body, "clickd_predictions_total{model=\"default\"}"), 5);
  EXPECT_EQ(Sample(body, "clickd_update_examples_total{model=\"default\"}"), 15);
  EXPECT_EQ(Sample(body, "clickd_model_updates{model=\"default\"}"), 15);
  EXPECT_EQ(
      Sample(body, "clickd_model_progressive_examples{model=\"default\",window=\"since_start\"}"),
      15);
  EXPECT_EQ(Sample(body, "clickd_model_progressive_examples{model=\"default\",window=\"10m\"}"),
            15);
  for (const char* window : {"since_start", "10m"}) {
    for (const char* metric : {"clickd_model_logloss", "clickd_model_auc",
                               "clickd_model_calibration", "clickd_model_auc_error_bound"}) {
      EXPECT_TRUE(Sample(body, absl::StrCat(metric, "{model=\"default\",window=\"", window, "\"}")))
          << metric << " " << window;
    }
  }
  EXPECT_GT(*Sample(body, "clickd_model_coordinates{model=\"default\"}"), 0);
  EXPECT_GT(*Sample(body, "clickd_model_bytes{model=\"default\"}"), 0);
  EXPECT_EQ(Sample(body, "clickd_model_updates{model=\"extra\"}"), 0);
  EXPECT_EQ(Sample(body, "clickd_predictions_total{model=\"extra\"}"), 0);
  EXPECT_NE(body.find("clickd_build_info{compiler=\""), std::string::npos);
  EXPECT_GT(*Sample(body, "clickd_process_start_time_seconds"), 1.7e9);

  const auto [code, output] = Promtool(body);
  EXPECT_EQ(code, 0) << output;
  EXPECT_EQ(output, "") << "promtool check metrics complains";

  // A model deleted at runtime takes its series with it.
  {
    auto stub = server.process->NewStub();
    ASSERT_TRUE(DeleteModel(*stub, "extra").ok());
  }
  const std::string after = Scrape(server.metrics_port);
  EXPECT_EQ(Sample(after, "clickd_model_updates{model=\"extra\"}"), std::nullopt);
  EXPECT_EQ(Sample(after, "clickd_predictions_total{model=\"extra\"}"), std::nullopt);
  EXPECT_EQ(Sample(after, Requests("DeleteModel", "OK")), 1);
  EXPECT_EQ(Promtool(after).first, 0);

  EXPECT_EQ(server.process->Stop().ToString(), "exit 0");
}

// The impression-to-click loop's series: a model created with feedback
// logs the impressions of its Predicts, joins a click 2 minutes after its
// impression, sees a duplicate and an id it never issued, and refuses
// impressions once its join buffer is full; the model without a loop has
// none of these series.
TEST(Metrics, ImpressionToClickLoop) {
  MetricsServer server = StartWithMetrics();
  ASSERT_NE(server.process, nullptr);
  int logged_predicts = 0;
  {
    auto stub = server.process->NewStub();
    ASSERT_TRUE(CreateLoopModel(*stub, "loop", 4096).ok());
    const int64_t before = UnixMicros();
    v1::PredictResponse first;
    ASSERT_TRUE(PredictLogged(*stub, "loop", &first).ok());
    ++logged_predicts;
    ASSERT_EQ(first.predictions_size(), 2);
    const uint64_t id = first.predictions(0).impression_id();
    v1::FeedbackResponse feedback;
    ASSERT_TRUE(
        Feedback(*stub, "loop", {{id, before + 120'000'000}, {id, 0}, {id + 1000, 0}}, &feedback)
            .ok());
    ASSERT_EQ(feedback.statuses_size(), 3);
    EXPECT_EQ(feedback.statuses(0), v1::FEEDBACK_JOINED);
    EXPECT_EQ(feedback.statuses(1), v1::FEEDBACK_ALREADY_LABELLED);
    EXPECT_EQ(feedback.statuses(2), v1::FEEDBACK_UNKNOWN);
    // Fill the buffer: every Predict logs 2 impressions until one is refused.
    grpc::Status status;
    for (int i = 0; i < 200 && status.ok(); ++i) {
      v1::PredictResponse response;
      status = PredictLogged(*stub, "loop", &response);
      if (status.ok()) ++logged_predicts;
    }
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  }
  ASSERT_GT(logged_predicts, 1);
  const std::string body = Scrape(server.metrics_port);
  const std::string loop = "model=\"loop\"";
  const auto outcome = [&](const std::string& o) {
    return Sample(
        body, absl::StrCat("clickd_model_feedback_items_total{", loop, ",outcome=\"", o, "\"}"));
  };
  EXPECT_EQ(Sample(body, absl::StrCat("clickd_model_impressions_logged_total{", loop, "}")),
            2 * logged_predicts);
  EXPECT_EQ(Sample(body, absl::StrCat("clickd_model_impressions_refused_total{", loop, "}")), 2);
  EXPECT_EQ(Sample(body, absl::StrCat("clickd_model_impressions_expired_total{", loop, "}")), 0);
  EXPECT_EQ(Sample(body, absl::StrCat("clickd_model_feedback_steps_total{", loop, "}")), 1);
  EXPECT_EQ(outcome("joined"), 1);
  EXPECT_EQ(outcome("already_labelled"), 1);
  EXPECT_EQ(outcome("unknown"), 1);
  EXPECT_EQ(outcome("late"), 0);
  EXPECT_EQ(outcome("other_model"), 0);
  EXPECT_EQ(Sample(body, absl::StrCat("clickd_model_join_buffer_impressions{", loop,
                                      ",state=\"pending\"}")),
            2 * logged_predicts - 1);
  EXPECT_EQ(Sample(body, absl::StrCat("clickd_model_join_buffer_impressions{", loop,
                                      ",state=\"labelled\"}")),
            1);
  EXPECT_EQ(Sample(body, absl::StrCat("clickd_model_join_buffer_max_bytes{", loop, "}")), 4096);
  const std::optional<double> bytes =
      Sample(body, absl::StrCat("clickd_model_join_buffer_bytes{", loop, "}"));
  ASSERT_TRUE(bytes);
  EXPECT_LE(*bytes, 4096);
  // Nearly full: the refused Predict's two impressions did not fit, and
  // each takes at most bytes / pending (the labelled one keeps less).
  const double pending = 2 * logged_predicts - 1;
  EXPECT_GT(*bytes + 2 * *bytes / pending, 4096);
  // One label delay of 2 minutes (less the time the Predict took).
  const std::string delay = "clickd_model_label_delay_seconds";
  EXPECT_EQ(Sample(body, absl::StrCat(delay, "_bucket{", loop, ",le=\"60\"}")), 0);
  EXPECT_EQ(Sample(body, absl::StrCat(delay, "_bucket{", loop, ",le=\"300\"}")), 1);
  EXPECT_EQ(Sample(body, absl::StrCat(delay, "_bucket{", loop, ",le=\"+Inf\"}")), 1);
  EXPECT_EQ(Sample(body, absl::StrCat(delay, "_count{", loop, "}")), 1);
  const std::optional<double> sum = Sample(body, absl::StrCat(delay, "_sum{", loop, "}"));
  ASSERT_TRUE(sum);
  EXPECT_GT(*sum, 100);
  EXPECT_LE(*sum, 120);
  // The model without a loop has none of these series.
  EXPECT_EQ(body.find("model=\"default\",le="), std::string::npos);
  for (const char* name :
       {"clickd_model_join_buffer_bytes", "clickd_model_impressions_logged_total",
        "clickd_model_feedback_steps_total"}) {
    EXPECT_EQ(Sample(body, absl::StrCat(name, "{model=\"default\"}")), std::nullopt) << name;
  }
  EXPECT_EQ(Sample(body, "clickd_model_feedback_items_total{model=\"default\",outcome=\"joined\"}"),
            std::nullopt);
  const auto [code, output] = Promtool(body);
  EXPECT_EQ(code, 0) << output;
  EXPECT_EQ(output, "") << "promtool check metrics complains";
  EXPECT_EQ(server.process->Stop().ToString(), "exit 0");
}

// The scrape's value of `series` once it equals `want`, or its last value
// after about 10 s (the server learns of a stream's end asynchronously).
std::optional<double> AwaitSample(int port, const std::string& series, double want) {
  std::optional<double> value;
  for (int i = 0; i < 200; ++i) {
    value = Sample(Scrape(port), series);
    if (value == want) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return value;
}

// An UpdateStream to `server` that has sent one message of 2 examples.
struct OpenUpdateStream {
  explicit OpenUpdateStream(const ServerProcess& server) : stub(server.NewStub()) {
    SetDeadline(&context);
    writer = stub->UpdateStream(&context, &response);
    sent = writer->Write(UpdateOf("default", 2));
  }
  std::unique_ptr<v1::Clickd::Stub> stub;
  grpc::ClientContext context;
  v1::UpdateStreamResponse response;
  std::unique_ptr<grpc::ClientWriter<v1::UpdateRequest>> writer;
  bool sent = false;
};

// A stream the client cancels counts as CANCELLED, which is what it saw.
TEST(Metrics, CancelledStreamCountsAsCancelled) {
  MetricsServer server = StartWithMetrics();
  ASSERT_NE(server.process, nullptr);
  {
    OpenUpdateStream stream(*server.process);
    ASSERT_TRUE(stream.sent);
    stream.context.TryCancel();
    EXPECT_EQ(stream.writer->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  EXPECT_EQ(AwaitSample(server.metrics_port, Requests("UpdateStream", "CANCELLED"), 1), 1);
  EXPECT_EQ(Sample(Scrape(server.metrics_port), Requests("UpdateStream", "OK")), 0);
  EXPECT_EQ(server.process->Stop().ToString(), "exit 0");
}

// The load gauges: the limits as the flags set them, an open stream counted
// while it is open, and nothing queued or running once the calls are done.
TEST(Metrics, LoadGaugesFollowOpenStreamsBesideTheLimits) {
  MetricsServer server =
      StartWithMetrics({"--max_open_streams=3", "--max_queued_calls=99", "--worker_threads=3"});
  ASSERT_NE(server.process, nullptr);
  const std::string body = Scrape(server.metrics_port);
  EXPECT_EQ(Sample(body, "clickd_max_open_streams"), 3);
  EXPECT_EQ(Sample(body, "clickd_executor_max_queued_calls"), 99);
  EXPECT_EQ(Sample(body, "clickd_executor_worker_threads"), 3);
  EXPECT_EQ(Sample(body, "clickd_open_streams"), 0);
  {
    OpenUpdateStream stream(*server.process);
    ASSERT_TRUE(stream.sent);
    EXPECT_EQ(AwaitSample(server.metrics_port, "clickd_open_streams", 1), 1);
    ASSERT_TRUE(stream.writer->WritesDone());
    EXPECT_TRUE(stream.writer->Finish().ok());
  }
  EXPECT_EQ(AwaitSample(server.metrics_port, "clickd_open_streams", 0), 0);
  EXPECT_EQ(AwaitSample(server.metrics_port, "clickd_executor_running_calls", 0), 0);
  EXPECT_EQ(Sample(Scrape(server.metrics_port), "clickd_executor_queued_calls"), 0);
  EXPECT_EQ(server.process->Stop().ToString(), "exit 0");
}

TEST(Metrics, BusyMetricsPortStopsTheSecondServer) {
  MetricsServer first = StartWithMetrics();
  ASSERT_NE(first.process, nullptr);
  const auto run = RunClickd({absl::StrCat("--metrics_port=", first.metrics_port)}, seconds(20));
  EXPECT_EQ(run.status.ToString(), "exit 1") << run.output;
  EXPECT_NE(run.output.find(
                absl::StrCat("cannot listen on 127.0.0.1:", first.metrics_port, " for /metrics")),
            std::string::npos)
      << run.output;
  // The first server still answers every scrape itself.
  for (int i = 0; i < 5; ++i) EXPECT_NE(Scrape(first.metrics_port), "");
  EXPECT_EQ(first.process->Stop().ToString(), "exit 0");
}

TEST(Metrics, PortZeroDisablesAndBadPortIsAnError) {
  auto server = ServerProcess::Start();  // ServerProcess passes --metrics_port=0
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->Output().find("metrics on"), std::string::npos);
  EXPECT_EQ((*server)->Stop().ToString(), "exit 0");
  const auto run = RunClickd({"--metrics_port=70000"}, seconds(20));
  // Checked with the other flags before anything starts (exit 2).
  EXPECT_EQ(run.status.ToString(), "exit 2") << run.output;
  EXPECT_NE(run.output.find("--metrics_port=70000 must be in [0, 65535]"), std::string::npos)
      << run.output;
}

}  // namespace
}  // namespace clickd
