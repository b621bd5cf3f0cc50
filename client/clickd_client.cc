#include "client/clickd_client.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"

namespace clickd {
namespace {

absl::Status ValidateOptions(const ClientOptions& o) {
  const RetryPolicy& r = o.predict_retry;
  if (o.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("timeout must be positive");
  }
  if (r.max_attempts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("predict_retry.max_attempts is ", r.max_attempts, "; must be >= 1"));
  }
  if (r.initial_backoff <= absl::ZeroDuration() || r.max_backoff < r.initial_backoff) {
    return absl::InvalidArgumentError("predict_retry needs 0 < initial_backoff <= max_backoff");
  }
  if (!(r.multiplier >= 1.0) || !std::isfinite(r.multiplier)) {
    return absl::InvalidArgumentError("predict_retry.multiplier must be finite and >= 1");
  }
  if (!(r.jitter >= 0.0 && r.jitter <= 1.0)) {
    return absl::InvalidArgumentError("predict_retry.jitter must be in [0, 1]");
  }
  return absl::OkStatus();
}

// The sleep after failed attempt `attempt` (1-based), jitter included.
absl::Duration Backoff(const RetryPolicy& r, int attempt) {
  absl::Duration backoff = r.initial_backoff;
  for (int i = 1; i < attempt && backoff < r.max_backoff; ++i) backoff = backoff * r.multiplier;
  backoff = std::min(backoff, r.max_backoff);
  // One generator per thread: the client is shared, absl::BitGen is not.
  thread_local absl::BitGen gen;
  return backoff * absl::Uniform(absl::IntervalClosed, gen, 1.0 - r.jitter, 1.0 + r.jitter);
}

// What PredictAsync owns until its callback has run.
struct AsyncPredictCall {
  grpc::ClientContext context;
  v1::PredictRequest request;
  v1::PredictResponse response;
  ClickdClient::PredictCallback done;
};

}  // namespace

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// --- UpdateStreamWriter ---------------------------------------------------

UpdateStreamWriter::~UpdateStreamWriter() {
  if (finished_ || writer_ == nullptr) return;
  context_.TryCancel();
  writer_->Finish();
}

bool UpdateStreamWriter::Write(const v1::UpdateRequest& request) {
  return !finished_ && writer_->Write(request);
}

absl::StatusOr<v1::UpdateStreamResponse> UpdateStreamWriter::Finish() {
  if (finished_) return absl::FailedPreconditionError("the stream is already finished");
  finished_ = true;
  writer_->WritesDone();  // false if already broken; Finish says why
  const grpc::Status status = writer_->Finish();
  if (!status.ok()) return FromGrpcStatus(status);
  return std::move(response_);
}

// --- AckedUpdateStream ----------------------------------------------------

AckedUpdateStream::~AckedUpdateStream() {
  if (finished_ || stream_ == nullptr) return;
  context_.TryCancel();
  stream_->Finish();
}

absl::StatusOr<v1::UpdateAck> AckedUpdateStream::Send(const v1::UpdateRequest& request) {
  if (finished_) return absl::FailedPreconditionError("the stream is already finished");
  v1::UpdateAck ack;
  if (!stream_->Write(request) || !stream_->Read(&ack)) return FinishWithError();
  return ack;
}

absl::Status AckedUpdateStream::FinishWithError() {
  finished_ = true;
  const grpc::Status status = stream_->Finish();
  if (!status.ok()) return FromGrpcStatus(status);
  // The server closed the stream cleanly without acknowledging.
  return absl::UnavailableError("the server ended the stream without acknowledging the message");
}

absl::Status AckedUpdateStream::Finish() {
  if (finished_) return absl::FailedPreconditionError("the stream is already finished");
  finished_ = true;
  stream_->WritesDone();
  return FromGrpcStatus(stream_->Finish());
}

// --- ClickdClient ---------------------------------------------------------

absl::StatusOr<std::unique_ptr<ClickdClient>> ClickdClient::Create(const std::string& target,
                                                                   ClientOptions options) {
  if (target.empty()) return absl::InvalidArgumentError("target is empty; want host:port");
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  grpc::ChannelArguments args;
  // gRPC's defaults (1 s, growing to 120 s) would leave retries hitting a
  // channel still backing off after the server is back.
  auto ms = [](absl::Duration d) {
    return static_cast<int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(d), 1, 1 << 30));
  };
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, ms(options.predict_retry.initial_backoff));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, ms(options.predict_retry.max_backoff));
  return CreateWithChannel(
      grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args),
      std::move(options));
}

absl::StatusOr<std::unique_ptr<ClickdClient>> ClickdClient::CreateWithChannel(
    std::shared_ptr<grpc::ChannelInterface> channel, ClientOptions options) {
  if (channel == nullptr) return absl::InvalidArgumentError("channel is null");
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  if (!options.sleep) options.sleep = [](absl::Duration d) { absl::SleepFor(d); };
  return std::unique_ptr<ClickdClient>(new ClickdClient(std::move(channel), std::move(options)));
}

ClickdClient::ClickdClient(std::shared_ptr<grpc::ChannelInterface> channel, ClientOptions options)
    : stub_(v1::Clickd::NewStub(std::move(channel))), options_(std::move(options)) {}

ClickdClient::~ClickdClient() {
  std::unique_lock<std::mutex> lock(async_mu_);
  async_idle_.wait(lock, [this] { return async_outstanding_ == 0; });
}

absl::Duration ClickdClient::Timeout(const CallOptions& call) const {
  return call.timeout.value_or(options_.timeout);
}

void ClickdClient::Prepare(const CallOptions& call, grpc::ClientContext* context) const {
  context->set_deadline(absl::ToChronoTime(absl::Now() + Timeout(call)));
  context->set_wait_for_ready(call.wait_for_ready);
}

template <typename Response, typename Rpc>
absl::StatusOr<Response> ClickdClient::Unary(const CallOptions& call, Rpc&& rpc) const {
  grpc::ClientContext context;
  Prepare(call, &context);
  Response response;
  const grpc::Status status = rpc(&context, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::StatusOr<v1::PredictResponse> ClickdClient::Predict(const v1::PredictRequest& request,
                                                          const CallOptions& call) const {
  const RetryPolicy& retry = options_.predict_retry;
  const absl::Time deadline = absl::Now() + Timeout(call);
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    context.set_wait_for_ready(call.wait_for_ready);
    v1::PredictResponse response;
    const grpc::Status status = stub_->Predict(&context, request, &response);
    if (status.ok()) return response;
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE || attempt >= retry.max_attempts) {
      return FromGrpcStatus(status);
    }
    const absl::Duration backoff = Backoff(retry, attempt);
    if (absl::Now() + backoff >= deadline) return FromGrpcStatus(status);
    options_.sleep(backoff);
  }
}

void ClickdClient::PredictAsync(v1::PredictRequest request, PredictCallback done,
                                const CallOptions& call) const {
  auto* state = new AsyncPredictCall;
  state->request = std::move(request);
  state->done = std::move(done);
  Prepare(call, &state->context);
  AsyncStarted();
  stub_->async()->Predict(&state->context, &state->request, &state->response,
                          [this, state](grpc::Status status) {
                            {
                              std::unique_ptr<AsyncPredictCall> owned(state);
                              if (status.ok()) {
                                owned->done(std::move(owned->response));
                              } else {
                                owned->done(FromGrpcStatus(status));
                              }
                            }
                            AsyncDone();  // the last use of `this`
                          });
}

void ClickdClient::AsyncStarted() const {
  std::lock_guard<std::mutex> lock(async_mu_);
  ++async_outstanding_;
}

void ClickdClient::AsyncDone() const {
  // Notify under the lock: once the destructor sees zero it may free the
  // condition variable.
  std::lock_guard<std::mutex> lock(async_mu_);
  if (--async_outstanding_ == 0) async_idle_.notify_all();
}

absl::StatusOr<v1::UpdateResponse> ClickdClient::Update(const v1::UpdateRequest& request,
                                                        const CallOptions& call) const {
  return Unary<v1::UpdateResponse>(call, [&](grpc::ClientContext* c, v1::UpdateResponse* r) {
    return stub_->Update(c, request, r);
  });
}

std::unique_ptr<UpdateStreamWriter> ClickdClient::OpenUpdateStream(const CallOptions& call) const {
  std::unique_ptr<UpdateStreamWriter> stream(new UpdateStreamWriter);
  Prepare(call, &stream->context_);
  stream->writer_ = stub_->UpdateStream(&stream->context_, &stream->response_);
  return stream;
}

std::unique_ptr<AckedUpdateStream> ClickdClient::OpenAckedUpdateStream(
    const CallOptions& call) const {
  std::unique_ptr<AckedUpdateStream> stream(new AckedUpdateStream);
  Prepare(call, &stream->context_);
  stream->stream_ = stub_->UpdateStreamAcked(&stream->context_);
  return stream;
}

absl::StatusOr<v1::SnapshotModelResponse> ClickdClient::SnapshotModel(
    const std::string& name, const CallOptions& call) const {
  v1::SnapshotModelRequest request;
  request.set_model(name);
  return Unary<v1::SnapshotModelResponse>(
      call, [&](grpc::ClientContext* c, v1::SnapshotModelResponse* r) {
        return stub_->SnapshotModel(c, request, r);
      });
}

absl::StatusOr<std::string> ClickdClient::StateDigest(const std::string& name,
                                                      const CallOptions& call) const {
  v1::GetModelRequest request;
  request.set_model(name);
  request.set_state_digest(true);
  auto response =
      Unary<v1::GetModelResponse>(call, [&](grpc::ClientContext* c, v1::GetModelResponse* r) {
        return stub_->GetModel(c, request, r);
      });
  if (!response.ok()) return response.status();
  return response->model().state_digest();
}

absl::StatusOr<v1::ModelInfo> ClickdClient::CreateModel(const v1::ModelConfig& config,
                                                        const CallOptions& call) const {
  v1::CreateModelRequest request;
  *request.mutable_config() = config;
  auto response =
      Unary<v1::CreateModelResponse>(call, [&](grpc::ClientContext* c, v1::CreateModelResponse* r) {
        return stub_->CreateModel(c, request, r);
      });
  if (!response.ok()) return response.status();
  return std::move(*response->mutable_model());
}

absl::StatusOr<v1::ModelInfo> ClickdClient::GetModel(const std::string& name,
                                                     const CallOptions& call) const {
  v1::GetModelRequest request;
  request.set_model(name);
  auto response =
      Unary<v1::GetModelResponse>(call, [&](grpc::ClientContext* c, v1::GetModelResponse* r) {
        return stub_->GetModel(c, request, r);
      });
  if (!response.ok()) return response.status();
  return std::move(*response->mutable_model());
}

absl::StatusOr<std::vector<v1::ModelInfo>> ClickdClient::ListModels(const CallOptions& call) const {
  auto response =
      Unary<v1::ListModelsResponse>(call, [&](grpc::ClientContext* c, v1::ListModelsResponse* r) {
        return stub_->ListModels(c, v1::ListModelsRequest(), r);
      });
  if (!response.ok()) return response.status();
  return std::vector<v1::ModelInfo>(response->models().begin(), response->models().end());
}

absl::Status ClickdClient::DeleteModel(const std::string& name, const CallOptions& call) const {
  v1::DeleteModelRequest request;
  request.set_model(name);
  return Unary<v1::DeleteModelResponse>(call,
                                        [&](grpc::ClientContext* c, v1::DeleteModelResponse* r) {
                                          return stub_->DeleteModel(c, request, r);
                                        })
      .status();
}

}  // namespace clickd
