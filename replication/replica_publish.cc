// Replica's publishing side: records go out without waiting
// (AsyncPublisher) and each publisher is answered once its record is both
// acknowledged by JetStream and applied here (replica.h).
#include <chrono>

#include "absl/strings/str_cat.h"
#include "core/persist/batch_codec.h"
#include "replication/async_publisher.h"
#include "replication/log_record.h"
#include "replication/replica.h"

namespace clickd {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

absl::Status Replica::PublishAsync(const std::string& record, std::string msg_id, Published done) {
  if (options_.read_only) {
    return absl::FailedPreconditionError(
        "this replica is read-only (an embedded replica): send writes to a clickd replica");
  }
  if (absl::Status diverged = DivergedStatus(); !diverged.ok()) return diverged;
  auto waiter = std::make_shared<Waiter>();
  waiter->msg_id = msg_id;
  waiter->on_done = std::move(done);
  const auto sent = Clock::now();
  {
    MutexLock lock(&mu_);
    if (!broken_.ok()) return absl::UnavailableError(broken_.message());
    if (stopping_) return absl::UnavailableError("the replica is shutting down");
    waiter->registered = waiters_.try_emplace(msg_id, waiter).second;
    // nats.c times the acknowledgement out; this bound only matters if it
    // never reports (its connection closed).
    waiter->expires = sent + options_.publish_timeout + options_.apply_timeout;
    in_flight_.insert(waiter);
  }
  absl::Status sending = publisher_->Publish(record, msg_id, options_.publish_timeout,
                                             [this, waiter, sent](absl::StatusOr<PublishAck> ack) {
                                               Acknowledged(waiter, std::move(ack), sent);
                                             });
  if (!sending.ok()) {
    if (options_.on_publish) options_.on_publish(SecondsSince(sent), false);
    MutexLock lock(&mu_);
    waiter->finished = true;
    in_flight_.erase(waiter);
    if (auto it = waiters_.find(msg_id); it != waiters_.end() && it->second == waiter) {
      waiters_.erase(it);
    }
  }
  return sending;
}

void Replica::Acknowledged(const std::shared_ptr<Waiter>& waiter, absl::StatusOr<PublishAck> ack,
                           Clock::time_point sent) {
  if (options_.on_publish) options_.on_publish(SecondsSince(sent), ack.ok());
  std::vector<Completion> completions;
  {
    MutexLock lock(&mu_);
    if (waiter->finished) return;
    if (!ack.ok()) {
      Finish(waiter, ack.status(), &completions);
    } else {
      waiter->ack = *ack;
      waiter->expires = Clock::now() + options_.apply_timeout;
      if (!TryFinish(waiter, &completions) && (ack->duplicate || !waiter->registered)) {
        by_sequence_.emplace(ack->sequence, waiter);
      }
    }
  }
  RunCompletions(std::move(completions));
}

bool Replica::TryFinish(const std::shared_ptr<Waiter>& waiter, std::vector<Completion>* out) {
  if (waiter->finished || !waiter->ack.has_value()) return false;
  const PublishAck ack = *waiter->ack;
  if (ack.duplicate || !waiter->registered) {
    // Applied (or to be applied) under the first copy's sequence.
    if (applied_ < ack.sequence) return false;
    auto dup = std::make_shared<Waiter>();
    dup->done = true;
    dup->duplicate = true;
    dup->sequence = ack.sequence;
    Finish(waiter, std::move(dup), out);
    return true;
  }
  if (!waiter->done) return false;
  if (waiter->delivered != ack.sequence) {
    // The server that acknowledged it and the one this replica reads from
    // hold different records at these sequences.
    std::string reason =
        absl::StrCat("JetStream acknowledged the record at sequence ", ack.sequence,
                     " but this replica's reader delivered it at sequence ", waiter->delivered,
                     ": the NATS servers' copies of the log differ");
    monitor_->MarkDiverged(reason);
    Finish(waiter,
           absl::UnavailableError(absl::StrCat(
               reason,
               "; this replica now refuses writes (docs/replication.md#divergence): retry on "
               "another replica with the same idempotency_key")),
           out);
    return true;
  }
  Finish(waiter, waiter, out);
  return true;
}

void Replica::Finish(const std::shared_ptr<Waiter>& waiter,
                     absl::StatusOr<std::shared_ptr<Waiter>> outcome,
                     std::vector<Completion>* out) {
  if (waiter->finished) return;
  waiter->finished = true;
  in_flight_.erase(waiter);
  if (auto it = waiters_.find(waiter->msg_id); it != waiters_.end() && it->second == waiter) {
    waiters_.erase(it);
  }
  out->push_back({std::move(waiter->on_done), std::move(outcome)});
}

void Replica::FinishReached(std::vector<Completion>* out) {
  while (!by_sequence_.empty() && by_sequence_.begin()->first <= applied_) {
    std::shared_ptr<Waiter> waiter = std::move(by_sequence_.begin()->second);
    by_sequence_.erase(by_sequence_.begin());
    TryFinish(waiter, out);
  }
}

void Replica::ExpireWaiters() {
  std::vector<Completion> completions;
  {
    MutexLock lock(&mu_);
    const auto now = Clock::now();
    std::vector<std::shared_ptr<Waiter>> expired;
    for (const std::shared_ptr<Waiter>& waiter : in_flight_) {
      if (waiter->expires <= now) expired.push_back(waiter);
    }
    for (const std::shared_ptr<Waiter>& waiter : expired) {
      if (!waiter->ack.has_value()) {
        Finish(waiter,
               absl::UnavailableError(absl::StrCat(
                   "NATS JetStream did not acknowledge the publish to ", log_->options().stream,
                   " in time: the record may or may not be in the log; retry with the same "
                   "idempotency_key")),
               &completions);
      } else if (waiter->ack->duplicate || !waiter->registered) {
        Finish(waiter,
               absl::UnavailableError(
                   absl::StrCat("the record is in the replicated log at sequence ",
                                waiter->ack->sequence, " but this replica has applied only up to ",
                                applied_, " after ", options_.apply_timeout.count(), " ms")),
               &completions);
      } else {
        Finish(waiter,
               absl::UnavailableError(
                   absl::StrCat("the record is in the replicated log at sequence ",
                                waiter->ack->sequence, " but this replica has applied only up to ",
                                applied_, " after ", options_.apply_timeout.count(),
                                " ms; it will be applied: retry with the same "
                                "idempotency_key to learn its outcome without learning it twice")),
               &completions);
      }
    }
    if (!expired.empty()) {
      // Their by_sequence_ entries are finished now: dropped here rather
      // than when the applier reaches them.
      for (auto it = by_sequence_.begin(); it != by_sequence_.end();) {
        it = it->second->finished ? by_sequence_.erase(it) : std::next(it);
      }
    }
  }
  RunCompletions(std::move(completions));
}

void Replica::RunCompletions(std::vector<Completion> completions) {
  for (Completion& c : completions) {
    if (c.on_done) c.on_done(std::move(c.outcome));
  }
}

absl::StatusOr<std::shared_ptr<Replica::Waiter>> Replica::PublishAndWait(const std::string& record,
                                                                         std::string msg_id) {
  struct Outcome {
    Mutex mu;
    CondVar cv;
    bool done ABSL_GUARDED_BY(mu) = false;
    absl::StatusOr<std::shared_ptr<Waiter>> value ABSL_GUARDED_BY(mu);
  };
  auto outcome = std::make_shared<Outcome>();
  absl::Status sent =
      PublishAsync(record, std::move(msg_id), [outcome](absl::StatusOr<std::shared_ptr<Waiter>> v) {
        MutexLock lock(&outcome->mu);
        outcome->value = std::move(v);
        outcome->done = true;
        outcome->cv.SignalAll();
      });
  if (!sent.ok()) return sent;
  // Always answered: by the acknowledgement and the applier, by
  // ExpireWaiters at the waiter's expiry, or by the destructor.
  MutexLock lock(&outcome->mu);
  while (!outcome->done) outcome->cv.Wait(&outcome->mu);
  return std::move(outcome->value);
}

}  // namespace clickd
