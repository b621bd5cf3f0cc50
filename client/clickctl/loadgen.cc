#include "client/clickctl/loadgen.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/clickctl/json_writer.h"
#include "client/clickctl/loadgen_calls.h"
#include "client/clickctl/loadgen_requests.h"
#include "client/clickctl/network_flags.h"
#include "client/clickd_client.h"

ABSL_FLAG(std::string, method, "predict", "loadgen: predict | update | update_stream | health");
ABSL_FLAG(std::optional<int>, concurrency, std::nullopt,
          "loadgen: closed loop with this many calls in flight (default 1)");
ABSL_FLAG(std::optional<double>, qps, std::nullopt,
          "loadgen: open loop at this many calls per second (update_stream: messages per "
          "second)");
ABSL_FLAG(double, duration_s, 5, "loadgen: seconds measured (after the warmup)");
ABSL_FLAG(double, warmup_s, 1, "loadgen: seconds of calls before measuring");
ABSL_FLAG(uint64_t, max_requests, 10'000'000, "loadgen: stop after this many measured calls");
ABSL_FLAG(int, context_features, 0, "loadgen: features of the shared context (0: no context)");
ABSL_FLAG(int, candidate_features, 40,
          "loadgen: features per candidate (predict) or per example (update)");
ABSL_FLAG(uint64_t, request_seed, 1, "loadgen: seed of the synthetic requests");
ABSL_FLAG(bool, feature_ids, false,
          "loadgen: send features as pre-hashed 64-bit ids instead of string names");
ABSL_FLAG(std::string, wire, "features",
          "loadgen: how requests carry features: features (a Feature message each) | packed "
          "(packed names, or ids with --feature_ids) | keys (packed keys hashed here with the "
          "model's seed, read by GetModel)");
ABSL_FLAG(bool, idempotency_keys, false,
          "loadgen --method=update_stream: give every message its own idempotency key "
          "(loadgen-<request_seed>-<i>), to measure keyed updates");
ABSL_DECLARE_FLAG(std::string, candidates);  // network_commands.cc
ABSL_DECLARE_FLAG(int, batch_size);          // server_replay.cc
ABSL_DECLARE_FLAG(bool, log_impressions);    // network_commands.cc

namespace clickd {
namespace {

const std::string kCommand = "loadgen";
constexpr absl::Duration kCallDeadline = absl::Seconds(10);
// Hard caps, so that no flag value makes an unbounded run.
constexpr double kMaxDurationS = 3600;
constexpr double kMaxWarmupS = 600;
constexpr int kMaxConcurrency = 10'000;
constexpr double kMaxQps = 1e6;
constexpr uint64_t kMaxRequests = 1'000'000'000;
constexpr int kMaxFeatures = 1 << 16;
constexpr int kMaxCandidates = 1 << 16;

struct Plan {
  std::string method;
  std::string mode;  // closed | open | stream
  LoadOptions load;
  RequestShape shape;
};

absl::Status CheckRange(const std::string& flag, double value, double low, double high) {
  if (!(value >= low && value <= high)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " is ", value, "; must be in [", low, ", ", high, "]"));
  }
  return absl::OkStatus();
}

// The flags `method` uses; any other clickctl flag set is a usage error.
std::set<std::string> UsedFlags(const std::string& method) {
  std::set<std::string> used = FlagsDefinedIn("loadgen.cc");
  used.insert({"server", "deadline_ms", "json"});
  if (method == "health") {
    for (const char* shape :
         {"context_features", "candidate_features", "request_seed", "feature_ids", "wire"}) {
      used.erase(shape);
    }
  } else {
    used.insert("model");
    used.insert(method == "update_stream" ? "batch_size" : "candidates");
  }
  if (method == "predict") used.insert("log_impressions");
  if (method != "update_stream") used.erase("idempotency_keys");
  return used;
}

absl::StatusOr<int> CandidatesFlag() {
  const std::string text = absl::GetFlag(FLAGS_candidates);
  if (text.empty()) return 1;
  int k = 0;
  if (!absl::SimpleAtoi(text, &k) || k < 1 || k > kMaxCandidates) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--candidates is \"", text, "\"; loadgen wants a count in [1, ", kMaxCandidates, "]"));
  }
  return k;
}

absl::Status PlanMode(const std::string& method, Plan* plan) {
  const std::optional<int> concurrency = absl::GetFlag(FLAGS_concurrency);
  const std::optional<double> qps = absl::GetFlag(FLAGS_qps);
  if (method == "update_stream") {
    if (concurrency.has_value()) {
      return absl::InvalidArgumentError(
          "--concurrency does not apply to --method=update_stream (one stream)");
    }
    plan->mode = "stream";
    if (!qps.has_value()) return absl::OkStatus();
    // Paced: message i is written no earlier than t0 + i / Q.
    plan->load.target_qps = *qps;
    return CheckRange("qps", *qps, 1e-3, kMaxQps);
  }
  if (concurrency.has_value() && qps.has_value()) {
    return absl::InvalidArgumentError(
        "give --concurrency (closed loop) or --qps (open loop), not both");
  }
  if (qps.has_value()) {
    if (absl::Status s = CheckRange("qps", *qps, 1e-3, kMaxQps); !s.ok()) return s;
    plan->mode = "open";
    plan->load.target_qps = *qps;
    return absl::OkStatus();
  }
  plan->mode = "closed";
  plan->load.concurrency = concurrency.value_or(1);
  return CheckRange("concurrency", plan->load.concurrency, 1, kMaxConcurrency);
}

absl::Status PlanShape(const std::string& method, Plan* plan) {
  RequestShape& shape = plan->shape;
  shape.context_features = absl::GetFlag(FLAGS_context_features);
  shape.candidate_features = absl::GetFlag(FLAGS_candidate_features);
  shape.feature_ids = absl::GetFlag(FLAGS_feature_ids);
  shape.log_impressions = absl::GetFlag(FLAGS_log_impressions);
  auto wire = ParseWireForm(absl::GetFlag(FLAGS_wire));
  if (!wire.ok()) return wire.status();
  shape.wire = *wire;
  if (absl::Status s = CheckRange("context_features", shape.context_features, 0, kMaxFeatures);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckRange("candidate_features", shape.candidate_features, 0, kMaxFeatures);
      !s.ok()) {
    return s;
  }
  if (method == "update_stream") {
    shape.candidates = absl::GetFlag(FLAGS_batch_size);
    return CheckRange("batch_size", shape.candidates, 1, kMaxCandidates);
  }
  auto k = CandidatesFlag();
  if (!k.ok()) return k.status();
  shape.candidates = *k;
  return absl::OkStatus();
}

absl::StatusOr<Plan> PlanFromFlags() {
  Plan plan;
  plan.method = absl::GetFlag(FLAGS_method);
  static const std::set<std::string> kMethods = {"predict", "update", "update_stream", "health"};
  if (kMethods.count(plan.method) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--method is \"", plan.method, "\"; want predict, update, update_stream or health"));
  }
  if (absl::Status s = CheckFlagsApply(kCommand, UsedFlags(plan.method)); !s.ok()) return s;
  if (absl::Status s = PlanMode(plan.method, &plan); !s.ok()) return s;
  if (absl::Status s = PlanShape(plan.method, &plan); !s.ok()) return s;
  const double duration = absl::GetFlag(FLAGS_duration_s);
  const double warmup = absl::GetFlag(FLAGS_warmup_s);
  if (absl::Status s = CheckRange("duration_s", duration, 1e-3, kMaxDurationS); !s.ok()) return s;
  if (absl::Status s = CheckRange("warmup_s", warmup, 0, kMaxWarmupS); !s.ok()) return s;
  plan.load.duration = absl::Seconds(duration);
  plan.load.warmup = absl::Seconds(warmup);
  plan.load.max_requests = absl::GetFlag(FLAGS_max_requests);
  if (plan.load.max_requests < 1 || plan.load.max_requests > kMaxRequests) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_requests must be in [1, ", kMaxRequests, "]"));
  }
  auto deadline = DeadlineFromFlags(kCallDeadline);
  if (!deadline.ok()) return deadline.status();
  plan.load.deadline = *deadline;
  if (absl::GetFlag(FLAGS_idempotency_keys)) {
    plan.load.idempotency_key_prefix =
        absl::StrCat("loadgen-", absl::GetFlag(FLAGS_request_seed), "-");
  }
  return plan;
}

// The model's hashing seed, which keys depend on (--wire=keys).
absl::StatusOr<uint64_t> HashingSeed(const std::shared_ptr<grpc::Channel>& channel,
                                     absl::Duration deadline) {
  auto client = ClickdClient::CreateWithChannel(channel);
  if (!client.ok()) return client.status();
  CallOptions call;
  call.timeout = deadline;
  auto info = (*client)->GetModel(ModelFlag(), call);
  if (!info.ok()) return info.status();
  return KeyHasher::ForModel(*info).seed();
}

// Builds the request pool and runs the plan.
LoadResult Execute(const Plan& plan, const std::shared_ptr<grpc::Channel>& channel) {
  const RequestShape& shape = plan.shape;
  const SyntheticRequests requests(shape, absl::GetFlag(FLAGS_request_seed));
  const uint64_t pool_size =
      PoolSize(static_cast<uint64_t>(shape.context_features) +
               static_cast<uint64_t>(shape.candidates) * std::max(shape.candidate_features, 1));
  const std::string model = ModelFlag();
  auto update_pool = [&] {
    return MakePool<v1::UpdateRequest>(pool_size,
                                       [&](uint64_t i) { return requests.Update(model, i); });
  };
  if (plan.method == "update_stream") return RunUpdateStream(channel, update_pool(), plan.load);
  std::unique_ptr<CallIssuer> issuer;
  if (plan.method == "predict") {
    issuer = NewPredictIssuer(channel, MakePool<v1::PredictRequest>(pool_size, [&](uint64_t i) {
                                return requests.Predict(model, i);
                              }));
  } else if (plan.method == "update") {
    issuer = NewUpdateIssuer(channel, update_pool());
  } else {
    issuer = NewHealthIssuer(channel);
  }
  LoadResult result = RunLoad(*issuer, plan.load);
  // Calls that outlived their deadlines still refer to the issuer: leak it
  // (the command then exits the process).
  if (!result.drained) (void)issuer.release();
  return result;
}

std::string ErrorsJson(const LoadResult& r) {
  JsonWriter w;
  for (const auto& [code, count] : r.errors) w.Integer(code, count);
  return w.Finish();
}

void PrintJson(const Plan& plan, const LoadResult& r) {
  JsonWriter w;
  w.String("method", plan.method).String("mode", plan.mode);
  if (plan.mode == "closed") w.Integer("concurrency", plan.load.concurrency);
  if (plan.mode == "open") w.Number("target_qps", plan.load.target_qps);
  if (plan.method != "health") {
    w.String("model", ModelFlag())
        .Integer("context_features", plan.shape.context_features)
        .Integer(plan.method == "update_stream" ? "batch_size" : "candidates",
                 plan.shape.candidates)
        .Integer("candidate_features", plan.shape.candidate_features)
        .Bool("feature_ids", plan.shape.feature_ids)
        .Bool("log_impressions", plan.shape.log_impressions)
        .String("wire", WireFormName(plan.shape.wire));
  }
  w.Number("duration_s", absl::ToDoubleSeconds(plan.load.duration))
      .Number("warmup_s", absl::ToDoubleSeconds(plan.load.warmup))
      .Integer("requests", r.requests)
      .Integer("ok", r.ok)
      .Integer("errors", r.errors_total())
      .Object("errors_by_code", ErrorsJson(r))
      .Integer("warmup_requests", r.warmup_requests)
      .Number("seconds", r.seconds)
      .Number("rate", r.rate());
  if (plan.method == "predict") w.Number("candidates_per_second", r.units_rate());
  if (plan.method == "update" || plan.method == "update_stream") {
    w.Number("examples_per_second", r.units_rate());
  }
  w.Number("p50_us", r.latency.p50_us)
      .Number("p90_us", r.latency.p90_us)
      .Number("p99_us", r.latency.p99_us)
      .Number("p999_us", r.latency.p999_us)
      .Number("min_us", r.latency.min_us)
      .Number("mean_us", r.latency.mean_us)
      .Number("max_us", r.latency.max_us)
      .Number("client_cpu_us_per_call", r.cpu_us_per_call());
  if (plan.mode == "open") {
    w.Number("max_send_lag_us", r.max_send_lag_us)
        .Number("final_send_lag_us", r.final_send_lag_us)
        .Integer("unsent", r.unsent);
  }
  std::printf("%s\n", w.Finish().c_str());
}

void PrintText(const Plan& plan, const LoadResult& r) {
  std::string mode;
  if (plan.mode == "closed")
    mode = absl::StrCat("closed loop, ", plan.load.concurrency, " in flight");
  if (plan.mode == "open") mode = absl::StrCat("open loop, target ", plan.load.target_qps, "/s");
  if (plan.mode == "stream")
    mode = absl::StrCat("one stream, ", plan.shape.candidates, " per message");
  std::printf("loadgen %s, %s: %llu requests in %.3f s (%.1f/s), errors %llu\n",
              plan.method.c_str(), mode.c_str(), static_cast<unsigned long long>(r.requests),
              r.seconds, r.rate(), static_cast<unsigned long long>(r.errors_total()));
  if (plan.method == "predict") std::printf("candidates/s %.1f\n", r.units_rate());
  if (plan.method != "predict" && plan.method != "health") {
    std::printf("examples/s %.1f\n", r.units_rate());
  }
  std::printf("%s (us): p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  mean %.1f\n",
              plan.mode == "stream" ? "write blocked" : "latency", r.latency.p50_us,
              r.latency.p90_us, r.latency.p99_us, r.latency.p999_us, r.latency.max_us,
              r.latency.mean_us);
  std::printf("client CPU per call (us): %.1f\n", r.cpu_us_per_call());
  if (plan.mode == "open") {
    std::printf("sends late by up to %.1f us (last %.1f us); unsent %llu\n", r.max_send_lag_us,
                r.final_send_lag_us, static_cast<unsigned long long>(r.unsent));
  }
  for (const auto& [code, count] : r.errors) {
    std::printf("  %s: %llu (first: %s)\n", code.c_str(), static_cast<unsigned long long>(count),
                r.error_examples.at(code).c_str());
  }
}

}  // namespace

int RunLoadgenCommand(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return UsageError(kCommand, absl::InvalidArgumentError(
                                    absl::StrCat("unexpected argument \"", args[0], "\"")));
  }
  auto plan = PlanFromFlags();
  if (!plan.ok()) return UsageError(kCommand, plan.status());
  auto channel = grpc::CreateChannel(ServerFlag(), grpc::InsecureChannelCredentials());
  if (!channel->WaitForConnected(absl::ToChronoTime(absl::Now() + plan->load.deadline))) {
    return ReportError(kCommand, absl::UnavailableError(absl::StrCat(
                                     "cannot connect to ", ServerFlag(), " within --deadline_ms")));
  }
  if (plan->shape.wire == WireForm::kKeys) {
    auto seed = HashingSeed(channel, plan->load.deadline);
    if (!seed.ok()) return ReportError(kCommand, seed.status());
    plan->shape.hashing_seed = *seed;
  }
  const LoadResult result = Execute(*plan, channel);
  if (JsonFlag()) {
    PrintJson(*plan, result);
  } else {
    PrintText(*plan, result);
  }
  if (!result.drained) {
    std::fflush(stdout);
    std::cerr << "clickctl loadgen: calls still in flight long after their deadlines\n";
    std::_Exit(1);  // they refer to state this process can no longer free safely
  }
  if (result.ok == 0) {
    std::cerr << "clickctl loadgen: no measured call succeeded\n";
    return 1;
  }
  return 0;
}

}  // namespace clickd
