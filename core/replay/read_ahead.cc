#include "core/replay/read_ahead.h"

#include <utility>

namespace clickd {

ReadAhead::ReadAhead(Producer producer, size_t batch_size, size_t batches)
    : batch_size_(batch_size < 1 ? 1 : batch_size), ring_(batches < 2 ? 2 : batches) {
  {
    MutexLock lock(&mu_);
    for (Batch& batch : ring_) {
      batch.examples.resize(batch_size_);
      free_.push_back(&batch);
    }
    filling_ = free_.front();
    free_.pop_front();
  }
  thread_ = std::thread([this, producer = std::move(producer)] { Produce(producer); });
}

ReadAhead::~ReadAhead() {
  {
    MutexLock lock(&mu_);
    cancelled_ = true;
    changed_.SignalAll();
  }
  thread_.join();
}

void ReadAhead::Produce(const Producer& producer) {
  absl::Status status = producer([this](const HashedExample& e) { return Add(e); });
  HandOver(/*last=*/true);
  MutexLock lock(&mu_);
  status_ = std::move(status);
  done_ = true;
  changed_.SignalAll();
}

bool ReadAhead::Add(const HashedExample& example) {
  if (filling_ == nullptr) return false;  // emitted again after a false
  HashedExample& slot = filling_->examples[filling_->size++];
  slot.features.assign(example.features.begin(), example.features.end());
  slot.label = example.label;
  slot.importance = example.importance;
  return filling_->size < batch_size_ || HandOver(/*last=*/false);
}

bool ReadAhead::HandOver(bool last) {
  MutexLock lock(&mu_);
  if (filling_ != nullptr && filling_->size > 0) {
    full_.push_back(filling_);
    filling_ = nullptr;
    changed_.SignalAll();
  }
  if (last) return true;
  while (free_.empty() && !cancelled_) changed_.Wait(&mu_);
  if (cancelled_) return false;
  filling_ = free_.front();
  free_.pop_front();
  return true;
}

absl::Span<const HashedExample> ReadAhead::NextBatch() {
  MutexLock lock(&mu_);
  if (consuming_ != nullptr) {
    consuming_->size = 0;
    free_.push_back(consuming_);
    consuming_ = nullptr;
    changed_.SignalAll();
  }
  while (full_.empty() && !done_) changed_.Wait(&mu_);
  if (full_.empty()) return {};
  consuming_ = full_.front();
  full_.pop_front();
  return absl::MakeConstSpan(consuming_->examples.data(), consuming_->size);
}

absl::Status ReadAhead::status() {
  MutexLock lock(&mu_);
  return status_;
}

}  // namespace clickd
