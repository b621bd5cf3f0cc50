#include "embedded/clickd_embedded.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "embedded/embedded_replica.h"

// A handle. Close may race other calls (a binding's close on one thread
// while another predicts): each call counts itself in `active` and checks
// `closed`; close sets `closed`, waits until no call is active, and then
// destroys the replica. The handle itself is never freed (a few dozen
// bytes per close), so a call that arrives after close reads a live
// `closed` and fails FAILED_PRECONDITION instead of touching freed memory.
struct clickd_embedded {
  std::unique_ptr<clickd::EmbeddedReplica> replica;
  std::atomic<int64_t> active{0};
  std::atomic<bool> closed{false};
};

namespace {

// Each calling thread's request and response, parsed into and answered in
// again and again: clearing a message keeps its candidates' and
// predictions' messages for the next call, which saves the few hundred
// mallocs and frees of a 40-candidate call, half its time here
// (docs/embedded.md). What a call whose request or response was over
// kScratchBytes (serialized) left is dropped after it, so a thread keeps
// at most the messages of a 16 KiB request and a 16 KiB response (a small
// request with many explanations can have a large response).
constexpr size_t kScratchBytes = 16 << 10;

struct Scratch {
  clickd::v1::PredictRequest request;
  clickd::v1::PredictResponse response;

  // After a call whose request and response had these sizes.
  void Trim(size_t request_bytes, size_t response_bytes) {
    if (request_bytes > kScratchBytes || response_bytes > kScratchBytes) {
      clickd::v1::PredictRequest().Swap(&request);
      clickd::v1::PredictResponse().Swap(&response);
    }
  }
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// A malloc'd copy of `bytes` (the caller frees it with
// clickd_embedded_free), or null if memory ran out.
char* Copy(const std::string& bytes) {
  char* out = static_cast<char*>(std::malloc(bytes.size() + 1));
  if (out == nullptr) return nullptr;
  std::memcpy(out, bytes.data(), bytes.size());
  out[bytes.size()] = '\0';
  return out;
}

// The status's code, with its message in *error.
int Fail(const absl::Status& status, char** error) {
  if (error != nullptr) *error = Copy(std::string(status.message()));
  return static_cast<int>(status.code());
}

// Runs `body` (returning a Status), turning an exception from it (out of
// memory, say) into an error: none may cross the C boundary.
template <typename Body>
int Guarded(char** error, Body body) {
  try {
    absl::Status status = body();
    return status.ok() ? 0 : Fail(status, error);
  } catch (const std::bad_alloc&) {
    return Fail(absl::ResourceExhaustedError("out of memory"), error);
  } catch (const std::exception& e) {
    return Fail(absl::InternalError(e.what()), error);
  }
}

// Adds keys[begin, end) to `example`, one Namespace per namespace index
// met (`slot` maps an index to its Namespace in the example, -1 for none
// yet; reset by the caller per example). `what` names the arrays in errors.
absl::Status AddKeys(const char* const* namespaces, size_t num_namespaces, const uint64_t* keys,
                     const uint32_t* namespace_of, const float* values, size_t begin, size_t end,
                     const char* what, std::vector<int>* slot, clickd::v1::Example* example) {
  for (size_t i = begin; i < end; ++i) {
    const uint32_t ns = namespace_of[i];
    if (ns >= num_namespaces) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s_namespaces[%d] is %d; must be below num_namespaces %d", what, i, ns, num_namespaces));
    }
    int& at = (*slot)[ns];
    if (at < 0) {
      at = example->namespaces_size();
      example->add_namespaces()->set_name(namespaces[ns]);
    }
    clickd::v1::Namespace* out = example->mutable_namespaces(at);
    out->add_keys(keys[i]);
    if (values != nullptr) out->add_key_values(values[i]);
  }
  return absl::OkStatus();
}

// Holds a handle open for one call: ok() is false once it was closed (the
// count and the flag are sequentially consistent, so close either sees
// this call active or this call sees it closed).
class CallGuard {
 public:
  explicit CallGuard(clickd_embedded* handle) : handle_(handle) {
    handle_->active.fetch_add(1);
    ok_ = !handle_->closed.load();
  }
  ~CallGuard() { handle_->active.fetch_sub(1); }
  CallGuard(const CallGuard&) = delete;
  CallGuard& operator=(const CallGuard&) = delete;

  bool ok() const { return ok_; }

 private:
  clickd_embedded* handle_;
  bool ok_ = false;
};

// The closed handles, kept (see clickd_embedded) and reachable from here,
// so that a leak checker does not count them.
std::mutex closed_handles_mu;
std::vector<clickd_embedded*>* closed_handles = nullptr;

void KeepClosed(clickd_embedded* handle) noexcept {
  std::lock_guard<std::mutex> lock(closed_handles_mu);
  try {
    if (closed_handles == nullptr) closed_handles = new std::vector<clickd_embedded*>();
    closed_handles->push_back(handle);
  } catch (...) {
    // Out of memory: the handle is kept all the same, just not listed.
  }
}

absl::Status Closed() { return absl::FailedPreconditionError("the embedded replica is closed"); }

}  // namespace

extern "C" {

int clickd_embedded_open(const char* nats_url, const char* stream_prefix, const char* nats_creds,
                         int64_t catch_up_timeout_ms, clickd_embedded** replica, char** error) {
  if (replica == nullptr) return Fail(absl::InvalidArgumentError("replica is NULL"), error);
  *replica = nullptr;
  return Guarded(error, [&]() -> absl::Status {
    clickd::EmbeddedReplicaOptions options;
    options.nats_url = nats_url != nullptr ? nats_url : "";
    if (stream_prefix != nullptr && *stream_prefix != '\0') options.stream_prefix = stream_prefix;
    if (nats_creds != nullptr) options.nats_creds = nats_creds;
    if (catch_up_timeout_ms > 0) {
      options.catch_up_timeout = std::chrono::milliseconds(catch_up_timeout_ms);
    }
    auto opened = clickd::EmbeddedReplica::Open(std::move(options));
    if (!opened.ok()) return opened.status();
    *replica = new clickd_embedded{*std::move(opened)};
    return absl::OkStatus();
  });
}

int clickd_embedded_predict(clickd_embedded* replica, const void* request, size_t request_len,
                            void** response, size_t* response_len, char** error) {
  if (replica == nullptr || response == nullptr || response_len == nullptr ||
      (request == nullptr && request_len > 0)) {
    return Fail(absl::InvalidArgumentError("replica, response and response_len must be set"),
                error);
  }
  *response = nullptr;
  *response_len = 0;
  CallGuard open(replica);
  if (!open.ok()) return Fail(Closed(), error);
  return Guarded(error, [&]() -> absl::Status {
    Scratch& scratch = ThreadScratch();
    clickd::v1::PredictRequest* parsed = &scratch.request;
    clickd::v1::PredictResponse* answer = &scratch.response;
    size_t size = 0;  // the response's, once known
    absl::Cleanup trim = [&] { scratch.Trim(request_len, size); };
    if (request_len > static_cast<size_t>(INT32_MAX) ||
        !parsed->ParseFromArray(request, static_cast<int>(request_len))) {
      return absl::InvalidArgumentError(
          absl::StrFormat("the request (%d bytes) is not a clickd.v1.PredictRequest", request_len));
    }
    answer->Clear();
    if (absl::Status s = replica->replica->Predict(*parsed, answer); !s.ok()) return s;
    size = answer->ByteSizeLong();
    auto* out = static_cast<uint8_t*>(std::malloc(size == 0 ? 1 : size));
    if (out == nullptr) return absl::ResourceExhaustedError("out of memory for the response");
    answer->SerializeWithCachedSizesToArray(out);
    *response = out;
    *response_len = size;
    return absl::OkStatus();
  });
}

int clickd_embedded_state_digest(clickd_embedded* replica, const char* model, char digest[17],
                                 char** error) {
  if (replica == nullptr || model == nullptr || digest == nullptr) {
    return Fail(absl::InvalidArgumentError("replica, model and digest must be set"), error);
  }
  CallGuard open(replica);
  if (!open.ok()) return Fail(Closed(), error);
  return Guarded(error, [&]() -> absl::Status {
    auto computed = replica->replica->StateDigest(model);
    if (!computed.ok()) return computed.status();
    std::snprintf(digest, 17, "%s", computed->c_str());
    return absl::OkStatus();
  });
}

uint64_t clickd_embedded_applied_version(clickd_embedded* replica) {
  if (replica == nullptr) return 0;
  CallGuard open(replica);
  return open.ok() ? replica->replica->applied_version() : 0;
}

int clickd_embedded_wait_for_version(clickd_embedded* replica, uint64_t version, int64_t timeout_ms,
                                     char** error) {
  if (replica == nullptr) return Fail(absl::InvalidArgumentError("replica is NULL"), error);
  CallGuard open(replica);
  if (!open.ok()) return Fail(Closed(), error);
  return Guarded(error, [&] {
    return replica->replica->WaitForVersion(
        version, std::chrono::milliseconds(std::max<int64_t>(0, timeout_ms)));
  });
}

char* clickd_embedded_stats_json(clickd_embedded* replica) {
  if (replica == nullptr) return nullptr;
  CallGuard open(replica);
  if (!open.ok()) return nullptr;
  try {
    const clickd::EmbeddedReplicaStats s = replica->replica->stats();
    std::string broken;
    for (char c : s.broken) {  // a JSON string: quotes, backslashes and controls escaped
      if (c == '"' || c == '\\') {
        broken += '\\';
        broken += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        broken += absl::StrFormat("\\u%04x", c);
      } else {
        broken += c;
      }
    }
    return Copy(
        absl::StrFormat(R"({"applied_version": %d, "stream_sequence": %d, "lag_seconds": %.3f, )"
                        R"("nats_connected": %s, "models": %d, "bootstraps": %d, "broken": "%s"})",
                        s.applied_version, s.stream_sequence, s.lag_seconds,
                        s.nats_connected ? "true" : "false", s.models, s.bootstraps, broken));
  } catch (...) {
    return nullptr;
  }
}

void clickd_embedded_close(clickd_embedded* replica) {
  if (replica == nullptr || replica->closed.exchange(true)) return;
  // Calls under way finish first (a wait_for_version may take its timeout).
  while (replica->active.load() != 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
  replica->replica.reset();
  KeepClosed(replica);
}

void clickd_embedded_free(void* buffer) { std::free(buffer); }

char* clickd_embedded_metrics_text(clickd_embedded* replica) {
  if (replica == nullptr) return nullptr;
  CallGuard open(replica);
  if (!open.ok()) return nullptr;
  try {
    return Copy(replica->replica->MetricsText());
  } catch (...) {
    return nullptr;
  }
}

int clickd_embedded_predict_keys(clickd_embedded* replica, const char* model, const char* variant,
                                 const char* const* namespaces, size_t num_namespaces,
                                 const uint64_t* context_keys, const uint32_t* context_namespaces,
                                 const float* context_values, size_t context_count,
                                 const uint64_t* candidate_keys,
                                 const uint32_t* candidate_namespaces,
                                 const float* candidate_values, const size_t* candidate_ends,
                                 size_t num_candidates, double* predictions, double* margins,
                                 uint64_t* model_version, char** error) {
  if (replica == nullptr || model == nullptr || (num_candidates > 0 && predictions == nullptr) ||
      (num_namespaces > 0 && namespaces == nullptr) ||
      (context_count > 0 && (context_keys == nullptr || context_namespaces == nullptr)) ||
      (num_candidates > 0 && candidate_ends == nullptr)) {
    return Fail(absl::InvalidArgumentError(
                    "replica, model, namespaces, the keys and their namespaces, candidate_ends "
                    "and predictions must be set for the counts given"),
                error);
  }
  const size_t candidate_count = num_candidates == 0 ? 0 : candidate_ends[num_candidates - 1];
  if (candidate_count > 0 && (candidate_keys == nullptr || candidate_namespaces == nullptr)) {
    return Fail(absl::InvalidArgumentError("candidate_keys and candidate_namespaces must be set"),
                error);
  }
  for (size_t i = 0; i < num_namespaces; ++i) {
    if (namespaces[i] == nullptr) {
      return Fail(absl::InvalidArgumentError(absl::StrFormat("namespaces[%d] is NULL", i)), error);
    }
  }
  CallGuard open(replica);
  if (!open.ok()) return Fail(Closed(), error);
  return Guarded(error, [&]() -> absl::Status {
    Scratch& scratch = ThreadScratch();
    clickd::v1::PredictRequest* request = &scratch.request;
    clickd::v1::PredictResponse* answer = &scratch.response;
    // The messages are kept for the next call only while this one is small
    // (Scratch::Trim); keys are 9 bytes each on the wire.
    const size_t request_bytes = (context_count + candidate_count) * 9;
    size_t size = 0;
    absl::Cleanup trim = [&] { scratch.Trim(request_bytes, size); };
    request->Clear();
    request->set_model(model);
    if (variant != nullptr) request->set_variant(variant);
    // Each example's namespaces by index: reset once per call, then only
    // the entries an example touched, so a candidate costs its keys, not
    // num_namespaces.
    thread_local std::vector<int> slot;
    slot.assign(num_namespaces, -1);
    auto forget = [&](const uint32_t* namespace_of, size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) slot[namespace_of[i]] = -1;
    };
    if (absl::Status s =
            AddKeys(namespaces, num_namespaces, context_keys, context_namespaces, context_values, 0,
                    context_count, "context", &slot, request->mutable_context());
        !s.ok()) {
      return s;
    }
    forget(context_namespaces, 0, context_count);
    size_t begin = 0;
    for (size_t c = 0; c < num_candidates; ++c) {
      const size_t end = candidate_ends[c];
      if (end < begin) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "candidate_ends[%d] is %d, below candidate_ends[%d] %d", c, end, c - 1, begin));
      }
      if (absl::Status s =
              AddKeys(namespaces, num_namespaces, candidate_keys, candidate_namespaces,
                      candidate_values, begin, end, "candidate", &slot, request->add_candidates());
          !s.ok()) {
        return s;
      }
      forget(candidate_namespaces, begin, end);
      begin = end;
    }
    answer->Clear();
    if (absl::Status s = replica->replica->Predict(*request, answer); !s.ok()) return s;
    size = answer->predictions_size() * 20;
    if (static_cast<size_t>(answer->predictions_size()) != num_candidates) {
      return absl::InternalError(absl::StrFormat("%d predictions for %d candidates",
                                                 answer->predictions_size(), num_candidates));
    }
    for (size_t c = 0; c < num_candidates; ++c) {
      const clickd::v1::Prediction& p = answer->predictions(static_cast<int>(c));
      predictions[c] = p.prediction();
      if (margins != nullptr) margins[c] = p.margin();
    }
    if (model_version != nullptr) *model_version = answer->model_version();
    return absl::OkStatus();
  });
}

int clickd_embedded_predict_keys_request(clickd_embedded* replica,
                                         clickd_embedded_keys_request* request, char** error) {
  if (request == nullptr) return Fail(absl::InvalidArgumentError("request is NULL"), error);
  clickd_embedded_keys_request& r = *request;
  return clickd_embedded_predict_keys(replica, r.model, r.variant, r.namespaces, r.num_namespaces,
                                      r.context_keys, r.context_namespaces, r.context_values,
                                      r.context_count, r.candidate_keys, r.candidate_namespaces,
                                      r.candidate_values, r.candidate_ends, r.num_candidates,
                                      r.predictions, r.margins, &r.model_version, error);
}

}  // extern "C"
