#include "client/clickctl/loadgen_calls.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "clickd/v1/clickd.grpc.pb.h"

namespace clickd {
namespace {

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

grpc::Status Malformed(const std::string& what) {
  return grpc::Status(grpc::StatusCode::INTERNAL, "malformed response: " + what);
}

// Sends each pool request as the bytes it was serialized to once, as the
// health issuer and bench/vw_compare's vw_loadgen send prebuilt bytes: a
// call costs the client the RPC and the response's parse, not protobuf's
// serialization of a request that never changes. A grpc::Slice is
// reference-counted, so a call's ByteBuffer shares the pool's bytes.
class PredictIssuer final : public CallIssuer {
 public:
  PredictIssuer(std::shared_ptr<grpc::Channel> channel, const std::vector<v1::PredictRequest>& pool)
      : stub_(std::move(channel)) {
    encoded_.reserve(pool.size());
    candidates_.reserve(pool.size());
    for (const v1::PredictRequest& request : pool) {
      const std::string bytes = request.SerializeAsString();
      encoded_.emplace_back(bytes.data(), bytes.size());
      candidates_.push_back(request.candidates_size());
    }
  }

  void Start(uint64_t index, grpc::ClientContext* context, Done done) override {
    const size_t i = index % encoded_.size();
    auto* buffers = new Buffers;
    buffers->request = grpc::ByteBuffer(&encoded_[i], 1);
    stub_.UnaryCall(context, method_, grpc::StubOptions(), &buffers->request, &buffers->response,
                    [buffers, expected = candidates_[i], done = std::move(done)](grpc::Status s) {
                      if (s.ok()) s = CheckPredictions(buffers->response, expected);
                      delete buffers;
                      done(s);
                    });
  }

  uint64_t Units(uint64_t index) const override { return candidates_[index % candidates_.size()]; }

 private:
  struct Buffers {
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
  };

  static grpc::Status CheckPredictions(const grpc::ByteBuffer& bytes, int expected) {
    grpc::Slice slice;
    v1::PredictResponse response;
    if (!bytes.Valid() || !bytes.DumpToSingleSlice(&slice).ok() ||
        !response.ParseFromArray(slice.begin(), static_cast<int>(slice.size()))) {
      return Malformed("unreadable PredictResponse");
    }
    if (response.predictions_size() != expected) {
      return Malformed(
          absl::StrCat(response.predictions_size(), " predictions for ", expected, " candidates"));
    }
    return grpc::Status::OK;
  }

  grpc::GenericStub stub_;
  std::vector<grpc::Slice> encoded_;
  std::vector<int> candidates_;
  // Outlives every call: the call refers to the method name.
  const std::string method_ = "/clickd.v1.Clickd/Predict";
};

class UpdateIssuer final : public CallIssuer {
 public:
  UpdateIssuer(std::shared_ptr<grpc::Channel> channel, std::vector<v1::UpdateRequest> pool)
      : stub_(v1::Clickd::NewStub(std::move(channel))), pool_(std::move(pool)) {}

  void Start(uint64_t index, grpc::ClientContext* context, Done done) override {
    const v1::UpdateRequest& request = pool_[index % pool_.size()];
    auto* response = new v1::UpdateResponse;
    stub_->async()->Update(
        context, &request, response,
        [response, expected = ExamplesIn(request), done = std::move(done)](grpc::Status s) {
          if (s.ok() && response->applied() != expected) {
            s = Malformed(absl::StrCat("applied ", response->applied(), " of ", expected));
          }
          delete response;
          done(s);
        });
  }

  uint64_t Units(uint64_t index) const override { return ExamplesIn(pool_[index % pool_.size()]); }

 private:
  const std::unique_ptr<v1::Clickd::Stub> stub_;
  const std::vector<v1::UpdateRequest> pool_;
};

class HealthIssuer final : public CallIssuer {
 public:
  explicit HealthIssuer(std::shared_ptr<grpc::Channel> channel) : stub_(std::move(channel)) {}

  void Start(uint64_t index, grpc::ClientContext* context, Done done) override {
    // An empty HealthCheckRequest (service "") encodes as zero bytes.
    auto* buffers = new Buffers;
    grpc::Slice empty;
    buffers->request = grpc::ByteBuffer(&empty, 1);
    stub_.UnaryCall(context, method_, grpc::StubOptions(), &buffers->request, &buffers->response,
                    [buffers, done = std::move(done)](grpc::Status s) {
                      if (s.ok()) s = CheckServing(buffers->response);
                      delete buffers;
                      done(s);
                    });
  }

  uint64_t Units(uint64_t) const override { return 1; }

 private:
  struct Buffers {
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
  };

  // A HealthCheckResponse of status SERVING is field 1, varint 1: 08 01.
  static grpc::Status CheckServing(const grpc::ByteBuffer& response) {
    grpc::Slice slice;
    if (!response.Valid() || !response.DumpToSingleSlice(&slice).ok()) {
      return Malformed("unreadable health response");
    }
    const std::string bytes(reinterpret_cast<const char*>(slice.begin()), slice.size());
    if (bytes != std::string("\x08\x01", 2)) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "health status is not SERVING");
    }
    return grpc::Status::OK;
  }

  grpc::GenericStub stub_;
  // Outlives every call: the call refers to the method name.
  const std::string method_ = "/grpc.health.v1.Health/Check";
};

}  // namespace

uint64_t ExamplesIn(const v1::UpdateRequest& request) {
  uint64_t n = request.examples_size();
  for (const v1::Impression& imp : request.impressions()) n += imp.candidates_size();
  return n;
}

std::unique_ptr<CallIssuer> NewPredictIssuer(std::shared_ptr<grpc::Channel> channel,
                                             std::vector<v1::PredictRequest> pool) {
  return std::make_unique<PredictIssuer>(std::move(channel), pool);
}

std::unique_ptr<CallIssuer> NewUpdateIssuer(std::shared_ptr<grpc::Channel> channel,
                                            std::vector<v1::UpdateRequest> pool) {
  return std::make_unique<UpdateIssuer>(std::move(channel), std::move(pool));
}

std::unique_ptr<CallIssuer> NewHealthIssuer(std::shared_ptr<grpc::Channel> channel) {
  return std::make_unique<HealthIssuer>(std::move(channel));
}

LoadResult RunUpdateStream(const std::shared_ptr<grpc::Channel>& channel,
                           std::vector<v1::UpdateRequest> pool, const LoadOptions& options) {
  auto stub = v1::Clickd::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(
      std::chrono::system_clock::now() +
      absl::ToChronoNanoseconds(options.warmup + options.duration + options.deadline));
  v1::UpdateStreamResponse summary;
  std::unique_ptr<grpc::ClientWriter<v1::UpdateRequest>> writer =
      stub->UpdateStream(&context, &summary);

  LatencyHistogram write_time;
  LoadResult result;
  const double cpu_before = ProcessCpuSeconds();
  const int64_t start = NowNanos();
  const int64_t warm_end = start + absl::ToInt64Nanoseconds(options.warmup);
  const int64_t end = warm_end + absl::ToInt64Nanoseconds(options.duration);
  uint64_t examples = 0;
  // Bounded by `end` and by max_requests measured messages; a broken stream
  // (deadline, server error) makes Write return false at once.
  for (uint64_t i = 0; result.requests < options.max_requests; ++i) {
    if (options.target_qps > 0) {  // paced: message i is due at start + i / Q
      const int64_t due =
          start + static_cast<int64_t>(static_cast<double>(i) * 1e9 / options.target_qps);
      if (due >= end) break;
      const int64_t wait = due - NowNanos();
      if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
    }
    const int64_t before = NowNanos();
    if (before >= end) break;
    v1::UpdateRequest& request = pool[i % pool.size()];
    if (!options.idempotency_key_prefix.empty()) {
      request.set_idempotency_key(absl::StrCat(options.idempotency_key_prefix, i));
    }
    if (!writer->Write(request)) break;
    if (before >= warm_end) {
      write_time.Record(NowNanos() - before);
      ++result.requests;
      examples += ExamplesIn(request);
    } else {
      ++result.warmup_requests;
    }
  }
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  result.seconds = static_cast<double>(NowNanos() - warm_end) / 1e9;
  result.cpu_seconds = ProcessCpuSeconds() - cpu_before;
  result.latency = write_time.Summarize();
  if (status.ok()) {
    result.ok = result.requests;
    result.ok_units = examples;
  } else {
    const std::string code =
        absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code()));
    result.errors[code] = 1;
    result.error_examples[code] = status.error_message();
  }
  return result;
}

}  // namespace clickd
