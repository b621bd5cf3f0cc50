// Bytes of the impression-to-click loop's state that a damaged disk or log
// could hand us: update-log payloads (impressions, feedback, keyed
// records), an encoded JoinBuffer, an encoded FeatureAdmission filter and
// an encoded IdempotencyWindow. The first byte picks
// the decoder. None may crash, hang or allocate without bound; whatever
// decodes must re-encode and decode to the same state.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/feedback/join_buffer.h"
#include "core/persist/feedback_codec.h"
#include "core/persist/idempotency_window.h"
#include "core/store/feature_admission.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0:
      if (auto r = clickd::DecodeImpressions(bytes); r.ok()) {
        std::string again;
        clickd::EncodeImpressions(*r, &again);
        if (again != bytes) __builtin_trap();
      }
      break;
    case 1:
      if (auto r = clickd::DecodeFeedback(bytes); r.ok()) {
        std::string again;
        clickd::EncodeFeedback(*r, &again);
        if (again != bytes) __builtin_trap();
      }
      break;
    case 2: {
      const clickd::JoinBuffer::Options options{
          .ttl_us = 1000, .max_bytes = 1 << 20, .model_tag = 3};
      if (auto buffer = clickd::JoinBuffer::Decode(options, bytes); buffer.ok()) {
        if ((*buffer)->Encode() != bytes) __builtin_trap();
        clickd::Impression joined;
        (*buffer)->Label((uint64_t{3} << 48) | 1, 500, &joined);
        (*buffer)->Expire(1 << 30, [](const clickd::Impression&) {});
      }
      break;
    }
    case 3: {
      clickd::AdmissionOptions options;
      options.policy = clickd::AdmissionOptions::Policy::kBloom;
      options.counters = 64;
      if (auto admission = clickd::FeatureAdmission::Decode(options, bytes); admission.ok()) {
        if ((*admission)->Encode() != bytes) __builtin_trap();
        (*admission)->Admit(12345, 0);
      }
      break;
    }
    case 4:
      if (auto r = clickd::DecodeKeyed(bytes); r.ok()) {
        std::string again;
        clickd::EncodeKeyed(r->time_us, r->key, r->inner, &again);
        if (again != bytes) __builtin_trap();
        // What a replay does next with the inner record.
        if (clickd::ClassifyPayload(r->inner) == clickd::PayloadKind::kFeedback) {
          (void)clickd::DecodeFeedback(r->inner);
        }
      }
      break;
    case 5: {
      // A window wide and large enough that decoding forgets nothing.
      const clickd::IdempotencyOptions options{.window_us = int64_t{1} << 62,
                                               .max_keys = size_t{1} << 30};
      if (auto window = clickd::IdempotencyWindow::Decode(options, bytes); window.ok()) {
        if ((*window)->Encode() != bytes) __builtin_trap();
        (*window)->Insert("new-key", 1 << 30);
        (void)(*window)->Contains("a-key", 1 << 30);
      }
      break;
    }
  }
  return 0;
}
