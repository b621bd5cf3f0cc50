// Replica: exchanging checkpoints with the other replicas (replica.h
// describes the whole class, divergence.h what is compared).
#include <iostream>

#include "absl/strings/str_cat.h"
#include "replication/replica.h"

namespace clickd {

// What nats.c's message callback reaches. Shared with the subscription, so
// that a callback nats.c still runs while the replica goes away finds it
// alive; the subscription's completion callback says when none will come.
struct Replica::CheckpointFeed {
  std::shared_ptr<DivergenceMonitor> monitor;
  natsSubscription* subscription = nullptr;
  std::atomic<uint64_t> rejected{0};
  Mutex mu;
  CondVar completed_cv;
  bool completed ABSL_GUARDED_BY(mu) = false;

  static void OnMessage(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
    auto* feed = static_cast<CheckpointFeed*>(closure);
    auto checkpoint = DecodeCheckpoint(
        std::string_view(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg))));
    natsMsg_Destroy(msg);
    if (!checkpoint.ok()) {
      // Counted, not trusted: anyone who may publish on the subject could
      // send it.
      feed->rejected.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    feed->monitor->OnPeer(*checkpoint, std::chrono::steady_clock::now());
  }
  static void OnComplete(void* closure) {
    auto* feed = static_cast<CheckpointFeed*>(closure);
    MutexLock lock(&feed->mu);
    feed->completed = true;
    feed->completed_cv.SignalAll();
  }
};

absl::Status Replica::SubscribeCheckpoints() {
  if (options_.checkpoint_subject.empty()) return absl::OkStatus();
  auto feed = std::make_shared<CheckpointFeed>();
  feed->monitor = monitor_;
  natsStatus s = natsConnection_Subscribe(&feed->subscription, log_->nats()->connection(),
                                          options_.checkpoint_subject.c_str(),
                                          &CheckpointFeed::OnMessage, feed.get());
  if (s != NATS_OK) {
    return NatsError(s, absl::StrCat("subscribe to checkpoints on ", options_.checkpoint_subject));
  }
  natsSubscription_SetOnCompleteCB(feed->subscription, &CheckpointFeed::OnComplete, feed.get());
  checkpoint_feed_ = std::move(feed);
  return absl::OkStatus();
}

void Replica::UnsubscribeCheckpoints() {
  if (checkpoint_feed_ == nullptr) return;
  CheckpointFeed* feed = checkpoint_feed_.get();
  const bool unsubscribed = natsSubscription_Unsubscribe(feed->subscription) == NATS_OK;
  bool completed;
  {
    MutexLock lock(&feed->mu);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (unsubscribed && !feed->completed && std::chrono::steady_clock::now() < deadline) {
      feed->completed_cv.WaitFor(&feed->mu, deadline - std::chrono::steady_clock::now());
    }
    completed = feed->completed;
  }
  natsSubscription_Destroy(feed->subscription);
  if (!completed) {
    // A callback may still come: leave it a live feed rather than free it
    // under nats.c.
    new std::shared_ptr<CheckpointFeed>(checkpoint_feed_);
  }
  checkpoint_feed_.reset();
}

void Replica::CheckpointLoop() {
  for (;;) {
    if (!Pause(options_.checkpoint_interval)) return;
    const Checkpoint mine = monitor_->Current(options_.replica_id, broken().ok());
    const std::string bytes = EncodeCheckpoint(mine);
    // Best effort: a checkpoint lost to an outage is followed by the next.
    natsConnection_Publish(log_->nats()->connection(), options_.checkpoint_subject.c_str(),
                           bytes.data(), static_cast<int>(bytes.size()));
  }
}

}  // namespace clickd
