// ReadAhead: reads, parses and hashes a log's examples on a thread of its
// own, while the caller learns the ones before them.
//
// Offline training is a loop of parse, hash, learn; learning must stay in
// file order on one thread (progressive validation scores each example
// before its step), but reading the next examples need not wait for it. On
// the synthetic click log parse + hash are ~1 us of the ~3.4 us an example
// costs, so with a second core the learner runs alone
// (docs/archive/performance_training.md, "Reading ahead").
//
// The producer hands over batches of `batch_size` examples through a ring of
// `batches` buffers that are reused (each example's feature vector keeps its
// capacity), so steady state allocates nothing and memory is bounded by the
// ring. Examples come out in the order the producer emitted them.
//
// Thread safety: one consumer thread calls NextBatch and status; the
// producer runs on the ReadAhead's own thread.
#ifndef CLICKD_CORE_REPLAY_READ_AHEAD_H_
#define CLICKD_CORE_REPLAY_READ_AHEAD_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/base/mutex.h"
#include "core/features/hasher.h"

namespace clickd {

// One training example after hashing.
struct HashedExample {
  std::vector<HashedFeature> features;
  float label = 0;
  float importance = 1;
};

class ReadAhead {
 public:
  // Emit returns false once the consumer has gone: the producer should stop.
  using Emit = absl::FunctionRef<bool(const HashedExample&)>;
  using Producer = std::function<absl::Status(Emit)>;

  // Starts `producer` on a thread of its own.
  explicit ReadAhead(Producer producer, size_t batch_size = 256, size_t batches = 8);
  // Stops the producer at its next emit and waits for it.
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // The next batch of examples, empty at the end. Valid until the next call.
  absl::Span<const HashedExample> NextBatch();
  // What the producer returned; call once NextBatch returned an empty batch.
  absl::Status status();

 private:
  struct Batch {
    std::vector<HashedExample> examples;  // capacity batch_size_, reused
    size_t size = 0;
  };

  void Produce(const Producer& producer);
  // Emits one example into the batch being filled; hands it over when full.
  bool Add(const HashedExample& example);
  // Hands the batch being filled to the consumer (if it holds any) and takes
  // a free one. False once the consumer has gone.
  bool HandOver(bool last);

  const size_t batch_size_;
  Mutex mu_;
  CondVar changed_;
  std::deque<Batch*> full_ ABSL_GUARDED_BY(mu_);
  std::deque<Batch*> free_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;       // the producer has returned
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;  // the consumer has gone
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::vector<Batch> ring_;
  Batch* filling_ = nullptr;    // the producer's own
  Batch* consuming_ = nullptr;  // the consumer's own
  std::thread thread_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_REPLAY_READ_AHEAD_H_
