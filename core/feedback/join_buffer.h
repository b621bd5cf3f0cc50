// JoinBuffer: the impressions a model is waiting to hear about (issue 15).
//
// In an ad system the label is not known when the ad is scored. Predict can
// log each scored candidate as an impression: its hashed features (exactly
// what a learning step takes, not the request's strings). A click (or an
// explicit non-click) arrives later by impression id and is joined to those
// features, so the model learns it as an Update of the same example would
// be. An impression that hears nothing by its TTL expires; what the model
// then does with it (learn a negative, or nothing) is the caller's choice.
//
// Ids are issued by the buffer, densely and in order: a tag of the model's
// incarnation in the top 24 bits (16 for a model created before such tags,
// a hash of its name), then a counter. So a lookup is an index, and an id
// the buffer no longer holds is told apart from one it never issued:
//   - tag of another model                          -> kOtherModel
//   - counter at or past the next one to be issued   -> kUnknown
//   - issued, and gone or past its TTL               -> kExpired
//   - labelled before (kept until its TTL, without
//     its features, so a repeat is recognised)       -> kAlreadyLabelled
//
// The buffer keeps no clock: each call takes the time it happens at (in
// microseconds; the serving layer takes it from the update-log record that
// carries the event), so a replay of the same calls (a restart, another
// replica) rebuilds the same buffer, issues the same ids and expires the
// same impressions. Times that go backwards are treated as the latest time
// seen. Expiry is in id order: a TTL change applies to impressions added
// after it.
//
// Memory is bounded by Options::max_bytes, counted as ImpressionBytes()
// documents. Add refuses a batch that does not fit (RESOURCE_EXHAUSTED,
// naming the budget), all or nothing: nothing a caller was given an id for
// is ever evicted early.
//
// Thread safety: safe for concurrent use (one mutex).
#ifndef CLICKD_CORE_FEEDBACK_JOIN_BUFFER_H_
#define CLICKD_CORE_FEEDBACK_JOIN_BUFFER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/base/mutex.h"
#include "core/features/hasher.h"

namespace clickd {

// One impression to remember: its hashed features (after interactions, bias
// and merging, as Model::Learn takes them) and its dense values, if the
// model has dense namespaces.
struct ImpressionExample {
  absl::Span<const HashedFeature> features;
  absl::Span<const float> dense;
  // The margin Predict served for it: what the progressive metrics score
  // against the label that comes later.
  float margin = 0;
};

// An impression as the buffer hands it back.
struct Impression {
  uint64_t id = 0;
  int64_t logged_at_us = 0;
  float margin = 0;
  std::vector<HashedFeature> features;
  std::vector<float> dense;
};

enum class JoinOutcome { kJoined, kUnknown, kExpired, kAlreadyLabelled, kOtherModel };
std::string_view JoinOutcomeName(JoinOutcome outcome);

struct JoinBufferStats {
  uint64_t pending = 0;    // impressions waiting for a label
  uint64_t labelled = 0;   // labelled, kept (without features) until their TTL
  uint64_t bytes = 0;      // as ImpressionBytes() counts, summed
  uint64_t max_bytes = 0;  // the budget
  uint64_t next_id = 0;    // the id the next impression gets
};

class JoinBuffer {
 public:
  struct Options {
    int64_t ttl_us = 0;      // > 0
    uint64_t max_bytes = 0;  // > 0
    // The top bits of every id: `tag_bits` of them (16: the name hash of a
    // model created before per-incarnation tags; 24: FeedbackConfig::id_tag),
    // the counter below.
    uint32_t model_tag = 0;
    int tag_bits = 16;
  };

  // The bytes one impression is charged: its entry in the buffer plus its
  // features (sizeof(HashedFeature) each, 16 on x86-64: key, value and
  // padding) and dense values (4 bytes each), what it holds in memory.
  // A labelled impression is charged its entry only.
  static uint64_t ImpressionBytes(size_t features, size_t dense);

  explicit JoinBuffer(const Options& options);
  JoinBuffer(const JoinBuffer&) = delete;
  JoinBuffer& operator=(const JoinBuffer&) = delete;

  // Remembers `examples` as impressions logged at `now_us` and returns the
  // first one's id (the others follow, in order). RESOURCE_EXHAUSTED if they
  // do not all fit in the budget at once; nothing is added then.
  absl::StatusOr<uint64_t> Add(int64_t now_us, absl::Span<const ImpressionExample> examples);

  // Joins a label to impression `id` at `now_us`: on kJoined, `*joined` gets
  // the impression (features and all) and the impression is kept, labelled,
  // without its features until its TTL. Any other outcome changes nothing.
  JoinOutcome Label(uint64_t id, int64_t now_us, Impression* joined);

  // Forgets every impression whose TTL has passed at `now_us`, oldest first,
  // calling `unlabelled` for each that never got a label (the caller learns
  // it as a negative, or not).
  void Expire(int64_t now_us, absl::FunctionRef<void(const Impression&)> unlabelled);

  // What Add(now_us, examples) would refuse them for, were every impression
  // whose TTL has passed at `now_us` expired first (as an impressions
  // record's apply does): the budget, a non-finite margin, or ids running
  // out. Changes nothing: a caller checks before it logs the record, so
  // that a logged record always applies.
  absl::Status CheckAdd(int64_t now_us, absl::Span<const ImpressionExample> examples) const;

  // When the oldest impression held expires (microseconds), or nullopt for
  // an empty buffer: the server's clock asks for expiry when it passes.
  std::optional<int64_t> NextExpiryUs() const;

  // Changes the TTL (for impressions added from now on) and the budget (a
  // smaller one refuses new impressions until expiry makes room).
  void SetLimits(int64_t ttl_us, uint64_t max_bytes);

  JoinBufferStats Stats() const;

  // The whole buffer, for a snapshot: Decode(Encode()) holds the same
  // impressions, labels, ids and byte count. Decode checks every length and
  // order and returns DATA_LOSS naming what is wrong, never a partial buffer.
  std::string Encode() const;
  static absl::StatusOr<std::unique_ptr<JoinBuffer>> Decode(const Options& options,
                                                            std::string_view bytes);

 private:
  struct Entry {
    int64_t logged_at_us = 0;
    int64_t expires_at_us = 0;
    bool labelled = false;
    float margin = 0;
    std::vector<HashedFeature> features;
    std::vector<float> dense;
  };
  static uint64_t EntryBytes(const Entry& entry);
  // Why `examples` cannot be added with `in_use` bytes held (OK if they
  // can); *needed gets the bytes they take. The one check of Add and CheckAdd.
  absl::Status Refusal(uint64_t in_use, absl::Span<const ImpressionExample> examples,
                       uint64_t* needed) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  uint64_t IdOf(uint64_t counter) const;
  // The latest time seen, so that time never runs backwards.
  int64_t Advance(int64_t now_us) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint32_t model_tag_;
  const int counter_bits_;        // 64 - the tag's bits
  const uint64_t counter_limit_;  // counters are issued below it
  mutable Mutex mu_;
  int64_t ttl_us_ ABSL_GUARDED_BY(mu_);
  uint64_t max_bytes_ ABSL_GUARDED_BY(mu_);
  int64_t now_us_ ABSL_GUARDED_BY(mu_) = 0;
  // entries_[i] is the impression with counter first_counter_ + i.
  uint64_t first_counter_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Entry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t pending_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace clickd

#endif  // CLICKD_CORE_FEEDBACK_JOIN_BUFFER_H_
