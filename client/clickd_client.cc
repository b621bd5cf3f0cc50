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
#include "xxhash.h"

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

uint64_t KeyHasher::NamespaceHash(std::string_view name) const {
  return XXH3_64bits_withSeed(name.data(), name.size(), seed_);
}

uint64_t KeyHasher::NamedKey(uint64_t namespace_hash, std::string_view name) {
  return XXH3_64bits_withSeed(name.data(), name.size(), namespace_hash);
}

uint64_t KeyHasher::IdKey(uint64_t namespace_hash, uint64_t id) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(id >> (8 * i));
  return XXH3_64bits_withSeed(bytes, sizeof(bytes), namespace_hash);
}

absl::StatusOr<v1::Example> KeyHasher::Hash(const v1::Example& example) const {
  v1::Example out;
  *out.mutable_dense() = example.dense();
  for (int n = 0; n < example.namespaces_size(); ++n) {
    const v1::Namespace& ns = example.namespaces(n);
    auto field = [n](const auto&... rest) { return absl::StrCat("namespaces[", n, "]", rest...); };
    v1::Namespace* target = out.add_namespaces();
    target->set_name(ns.name());
    const uint64_t ns_hash = NamespaceHash(ns.name());
    target->mutable_keys()->Reserve(ns.features_size() + ns.names_size() + ns.ids_size() +
                                    ns.keys_size());
    std::vector<float> values;
    values.reserve(target->keys().Capacity());
    auto add = [&](uint64_t key, float value) {
      target->add_keys(key);
      values.push_back(value);
    };
    for (int f = 0; f < ns.features_size(); ++f) {
      const v1::Feature& feature = ns.features(f);
      const float value = feature.has_value() ? feature.value() : 1.0f;
      if (feature.key_case() == v1::Feature::kId) {
        add(IdKey(ns_hash, feature.id()), value);
      } else if (feature.key_case() == v1::Feature::kName) {
        if (feature.name().empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(field(".features[", f, "].name is empty")));
        }
        add(NamedKey(ns_hash, feature.name()), value);
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat(field(".features[", f, "]"), " has neither name nor id"));
      }
    }
    // Packed values: empty (every value 1) or one per key.
    auto packed = [&](int keys, const google::protobuf::RepeatedField<float>& packed_values,
                      const char* values_field, const char* keys_field, auto key_of) {
      if (!packed_values.empty() && packed_values.size() != keys) {
        return absl::InvalidArgumentError(absl::StrCat(field(".", values_field), ": ",
                                                       packed_values.size(), " values for ", keys,
                                                       " ", keys_field));
      }
      for (int i = 0; i < keys; ++i) {
        absl::StatusOr<uint64_t> key = key_of(i);
        if (!key.ok()) return key.status();
        add(*key, packed_values.empty() ? 1.0f : packed_values.Get(i));
      }
      return absl::OkStatus();
    };
    absl::Status s = packed(
        ns.names_size(), ns.values(), "values", "names", [&](int i) -> absl::StatusOr<uint64_t> {
          if (ns.names(i).empty()) {
            return absl::InvalidArgumentError(absl::StrCat(field(".names[", i, "]"), " is empty"));
          }
          return NamedKey(ns_hash, ns.names(i));
        });
    if (s.ok()) {
      s = packed(ns.ids_size(), ns.id_values(), "id_values", "ids",
                 [&](int i) -> absl::StatusOr<uint64_t> { return IdKey(ns_hash, ns.ids(i)); });
    }
    if (s.ok()) {
      s = packed(ns.keys_size(), ns.key_values(), "key_values", "keys",
                 [&](int i) -> absl::StatusOr<uint64_t> { return ns.keys(i); });
    }
    if (!s.ok()) return s;
    if (std::any_of(values.begin(), values.end(), [](float v) { return v != 1.0f; })) {
      target->mutable_key_values()->Add(values.begin(), values.end());
    }
  }
  return out;
}

absl::StatusOr<HashedPredictContext> HashedPredictContext::Create(const KeyHasher& hasher,
                                                                  const v1::Example& context) {
  absl::StatusOr<v1::Example> hashed = hasher.Hash(context);
  if (!hashed.ok()) {
    return absl::Status(hashed.status().code(),
                        absl::StrCat("context.", hashed.status().message()));
  }
  return HashedPredictContext(hasher, *std::move(hashed));
}

absl::StatusOr<v1::PredictRequest> HashedPredictContext::Request(v1::PredictRequest request) const {
  *request.mutable_context() = context_;
  for (int i = 0; i < request.candidates_size(); ++i) {
    absl::StatusOr<v1::Example> hashed = hasher_.Hash(request.candidates(i));
    if (!hashed.ok()) {
      return absl::Status(hashed.status().code(),
                          absl::StrCat("candidates[", i, "].", hashed.status().message()));
    }
    *request.mutable_candidates(i) = *std::move(hashed);
  }
  return request;
}

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

template <typename Response, typename Rpc>
absl::StatusOr<Response> ClickdClient::Retried(const CallOptions& call, Rpc&& rpc,
                                               bool keyed) const {
  const RetryPolicy& retry = options_.predict_retry;
  // A keyed call may retry after its deadline passed (the server may have
  // learned it, and the key makes that safe): each attempt gets a deadline
  // of its own. Otherwise one deadline covers every attempt.
  absl::Time deadline = absl::Now() + Timeout(call);
  for (int attempt = 1;; ++attempt) {
    if (keyed && attempt > 1) deadline = absl::Now() + Timeout(call);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    context.set_wait_for_ready(call.wait_for_ready);
    Response response;
    const grpc::Status status = rpc(&context, &response);
    if (status.ok()) return response;
    const bool retriable = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                           (keyed && status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
    if (!retriable || attempt >= retry.max_attempts) return FromGrpcStatus(status);
    const absl::Duration backoff = Backoff(retry, attempt);
    if (!keyed && absl::Now() + backoff >= deadline) return FromGrpcStatus(status);
    options_.sleep(backoff);
  }
}

absl::StatusOr<v1::PredictResponse> ClickdClient::Predict(const v1::PredictRequest& request,
                                                          const CallOptions& call) const {
  auto rpc = [&](grpc::ClientContext* c, v1::PredictResponse* r) {
    return stub_->Predict(c, request, r);
  };
  if (request.log_impressions()) return Unary<v1::PredictResponse>(call, rpc);
  return Retried<v1::PredictResponse>(call, rpc);
}

absl::StatusOr<v1::FeedbackResponse> ClickdClient::Feedback(const v1::FeedbackRequest& request,
                                                            const CallOptions& call) const {
  return Retried<v1::FeedbackResponse>(
      call,
      [&](grpc::ClientContext* c, v1::FeedbackResponse* r) {
        return stub_->Feedback(c, request, r);
      },
      /*keyed=*/!request.idempotency_key().empty());
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
  auto rpc = [&](grpc::ClientContext* c, v1::UpdateResponse* r) {
    return stub_->Update(c, request, r);
  };
  // Only a keyed Update is safe to send twice (docs/api.md#idempotency).
  if (request.idempotency_key().empty()) return Unary<v1::UpdateResponse>(call, rpc);
  return Retried<v1::UpdateResponse>(call, rpc, /*keyed=*/true);
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
