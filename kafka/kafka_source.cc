#include "kafka/kafka_source.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/persist/idempotency_window.h"
#include "kafka/kafka_record.h"
#include "server/feedback_request.h"
#include "server/update_request.h"

namespace clickd {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Errors the writer may stop returning: retried. Any other refuses the
// batch's records for good.
bool Retryable(const absl::Status& s) {
  return s.code() == absl::StatusCode::kUnavailable ||
         s.code() == absl::StatusCode::kResourceExhausted ||
         s.code() == absl::StatusCode::kFailedPrecondition ||
         s.code() == absl::StatusCode::kAborted || s.code() == absl::StatusCode::kInternal;
}

absl::Status SetConf(rd_kafka_conf_t* conf, const std::string& name, const std::string& value) {
  char error[512];
  if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), error, sizeof(error)) !=
      RD_KAFKA_CONF_OK) {
    return absl::InvalidArgumentError(absl::StrCat("kafka setting ", name, ": ", error));
  }
  return absl::OkStatus();
}

}  // namespace

// What the consuming thread owns: the librdkafka handle and the batch being
// gathered. Only that thread (and librdkafka's callbacks, which it serves
// from rd_kafka_consumer_poll) touches it.
struct KafkaSource::Consumer {
  KafkaSource* owner = nullptr;
  rd_kafka_t* rk = nullptr;
  std::string topic;
  std::string feedback_topic;  // empty: none
  std::string model;
  // For errors: what the SASL settings were (kafka.sasl_credentials_file's
  // path and user, kafka.sasl_mechanism), empty without SASL.
  std::string sasl_setting;

  // A topic's partition.
  using PartitionId = std::pair<std::string, int32_t>;

  // A feedback record of a batch: where its items are, and what is needed
  // to log it and copy it to the dead-letter topic if an item is not
  // joined.
  struct FeedbackRecordRef {
    int64_t offset = 0;
    size_t first_item = 0;
    size_t items = 0;
    std::string value;
    std::string key;
  };

  struct Pending {
    std::string topic;  // the examples topic or the feedback topic
    int32_t partition = -1;
    int64_t last_offset = -1;  // the last record read into the batch
    int64_t last_timestamp_ms = 0;
    std::vector<ValidatedUpdate> updates;
    // A feedback topic's batch: the labels, and the records they came from.
    std::vector<FeedbackItem> items;
    std::vector<FeedbackRecordRef> feedback_records;
    size_t examples = 0;  // examples, or labels
    size_t bytes = 0;
    uint64_t records = 0;   // to learn
    uint64_t rejected = 0;  // refused
    uint64_t epoch = 0;     // the partition's epoch when it was read (Part)
    std::chrono::steady_clock::time_point started;
  } pending;

  // Each assigned partition, as the learning thread sees it: `position`,
  // the model's position after the last batch learned (-1: none), where
  // the next batch starts (SourcePosition::start); `epoch`, which changes
  // whenever the partition is read again from the model's position (an
  // assignment, or a batch another replica learned first): batches read
  // before that are dropped unlearned. Epochs come from one counter, so
  // none repeats.
  struct Part {
    int64_t position = -1;
    uint64_t epoch = 0;
  };

  // Log lines per second, so that a topic full of bad records cannot fill
  // the disk: at most kLogsPerSecond, then a count of the ones left out.
  static constexpr int kLogsPerSecond = 20;
  Mutex log_mu;  // the consuming and the learning thread both log
  int64_t log_second ABSL_GUARDED_BY(log_mu) = 0;
  int logged ABSL_GUARDED_BY(log_mu) = 0;
  uint64_t suppressed ABSL_GUARDED_BY(log_mu) = 0;

  // Batches gathered and not yet learned, oldest first, learned in order by
  // one learning thread, so that parsing and checking the next batch
  // overlaps learning this one. At most kMaxQueued: then Flush waits
  // (backpressure reaches the consumer).
  static constexpr size_t kMaxQueued = 2;
  Mutex queue_mu;
  CondVar queue_cv;
  std::deque<Pending> queue ABSL_GUARDED_BY(queue_mu);
  bool learning ABSL_GUARDED_BY(queue_mu) = false;  // a batch is out of the queue, being learned
  bool done ABSL_GUARDED_BY(queue_mu) = false;      // no more batches come
  std::map<PartitionId, Part> states ABSL_GUARDED_BY(queue_mu);
  uint64_t last_epoch ABSL_GUARDED_BY(queue_mu) = 0;
  // Partitions the consuming thread must seek back to `states[p].position`.
  std::vector<PartitionId> reread ABSL_GUARDED_BY(queue_mu);
  // The consuming thread's own copy of each partition's epoch, stamped on
  // the batches it reads.
  std::map<PartitionId, uint64_t> read_epochs;

  ~Consumer() {
    if (rk != nullptr) rd_kafka_destroy(rk);
    if (dead_letters != nullptr) rd_kafka_destroy(dead_letters);
  }

  // Set when librdkafka reports a fatal error (the consumer fetches
  // nothing more: e.g. FENCED_INSTANCE_ID for a commit queued before a
  // session timeout, librdkafka PR #5585): the loop ends, and KafkaSources
  // starts the source again (KafkaSource::failed).
  std::atomic<bool> fatal{false};

  // The dead-letter topic's producer (null: the config names none) and
  // its topic.
  rd_kafka_t* dead_letters = nullptr;
  // "<instance>.<random>.": with a batch's epoch, its attempt
  // (SourcePosition::attempt), unique to this consumer.
  std::string attempt_prefix;
  std::string dead_letter_topic;

  // Delivery reports of the dead-letter producer (served by rd_kafka_poll
  // on the consuming thread).
  static void DeliveryCallback(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* self = static_cast<Consumer*>(opaque);
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      self->Log(absl::StrCat("dead-letter copy not written to ", self->dead_letter_topic, ": ",
                             rd_kafka_err2str(m->err)));
    }
    MutexLock lock(&self->owner->stats_mu_);
    ++(m->err == RD_KAFKA_RESP_ERR_NO_ERROR ? self->owner->stats_.dead_lettered
                                            : self->owner->stats_.dead_letter_failures);
  }

  // Copies a refused record to the dead-letter topic, with headers naming
  // where it came from and why it was refused. At least once: a record
  // refused again after a restart or a rebalance is copied again.
  // (librdkafka's producer is thread-safe: the consuming thread copies
  // records the checks refuse, the learning thread labels not joined.)
  void DeadLetter(const rd_kafka_message_t& m, const absl::Status& why) {
    DeadLetter(rd_kafka_topic_name(m.rkt), m.partition, m.offset,
               std::string_view(static_cast<const char*>(m.payload), m.payload ? m.len : 0),
               std::string_view(static_cast<const char*>(m.key), m.key ? m.key_len : 0), why);
  }
  void DeadLetter(const std::string& from, int32_t partition_number, int64_t offset_number,
                  std::string_view value, std::string_view key, const absl::Status& why) {
    if (dead_letters == nullptr) return;
    const std::string partition = absl::StrCat(partition_number);
    const std::string offset = absl::StrCat(offset_number);
    const std::string reason(why.message());
    const rd_kafka_resp_err_t err = rd_kafka_producev(
        dead_letters, RD_KAFKA_V_TOPIC(dead_letter_topic.c_str()),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
        RD_KAFKA_V_KEY(key.data(), key.size()),
        RD_KAFKA_V_HEADER("clickd_topic", from.data(), static_cast<ssize_t>(from.size())),
        RD_KAFKA_V_HEADER("clickd_partition", partition.data(),
                          static_cast<ssize_t>(partition.size())),
        RD_KAFKA_V_HEADER("clickd_offset", offset.data(), static_cast<ssize_t>(offset.size())),
        RD_KAFKA_V_HEADER("clickd_reason", reason.data(), static_cast<ssize_t>(reason.size())),
        RD_KAFKA_V_HEADER("clickd_model", model.data(), static_cast<ssize_t>(model.size())),
        RD_KAFKA_V_END);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      Log(absl::StrCat(TopicPrefix(from), "partition ", partition_number, " offset ", offset_number,
                       ": dead-letter copy not queued: ", rd_kafka_err2str(err)));
      MutexLock lock(&owner->stats_mu_);
      ++owner->stats_.dead_letter_failures;
    }
  }

  void Log(const std::string& line) {
    MutexLock lock(&log_mu);
    const int64_t second = NowMs() / 1000;
    if (second != log_second) {
      if (suppressed > 0) {
        std::cerr << "clickd: kafka model \"" << model << "\": " << suppressed
                  << " more line(s) left out" << std::endl;
      }
      log_second = second;
      logged = 0;
      suppressed = 0;
    }
    if (logged++ < kLogsPerSecond) {
      std::cerr << "clickd: kafka model \"" << model << "\" topic " << topic << ": " << line
                << std::endl;
    } else {
      ++suppressed;
    }
  }

  // "" for the examples topic (the log line names it), "feedback topic T: "
  // for the feedback topic.
  std::string TopicPrefix(const std::string& of) const {
    return of == topic ? std::string() : absl::StrCat("feedback topic ", of, ": ");
  }

  KafkaPartitionStats& PartitionStats(const std::string& of, int32_t partition)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(owner->stats_mu_) {
    auto& parts = owner->stats_.partitions;
    auto it = std::lower_bound(parts.begin(), parts.end(), PartitionId(of, partition),
                               [](const KafkaPartitionStats& p, const PartitionId& value) {
                                 return PartitionId(p.topic, p.partition) < value;
                               });
    if (it == parts.end() || it->partition != partition || it->topic != of) {
      it = parts.insert(it, KafkaPartitionStats{});
      it->topic = of;
      it->partition = partition;
    }
    return *it;
  }

  void OnRebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts) {
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      // The positions must include every batch already read, and (a
      // replica) every batch another replica learned before this one got
      // the partitions.
      Drain();
      if (absl::Status s = owner->writer_->SyncPositions(); !s.ok()) {
        Log(absl::StrCat("positions may be behind the replicated log (", s.message(),
                         "); a batch read from an old position learns nothing and is read again"));
      }
      std::string assigned;
      // Only this source's topic: a group is one model's (the default
      // group's name holds the model and the topic).
      rd_kafka_topic_partition_list_t* ours = rd_kafka_topic_partition_list_new(parts->cnt);
      for (int i = 0; i < parts->cnt; ++i) {
        const rd_kafka_topic_partition_t& p = parts->elems[i];
        if (topic != p.topic && feedback_topic != p.topic) {
          Log(absl::StrCat("ignoring partition ", p.partition, " of topic ", p.topic,
                           ", assigned by group; this source reads ", topic,
                           feedback_topic.empty() ? "" : " and " + feedback_topic));
          continue;
        }
        const std::string of = p.topic;
        // The model's own position wins over whatever the group committed;
        // a partition the model never learned from starts at its beginning.
        const int64_t position = owner->model_->idempotency().Position(of, p.partition);
        rd_kafka_topic_partition_list_add(ours, of.c_str(), p.partition)->offset =
            position >= 0 ? position : RD_KAFKA_OFFSET_BEGINNING;
        absl::StrAppend(&assigned, assigned.empty() ? "" : ", ", of == topic ? "" : of + " ",
                        p.partition, "@",
                        position >= 0 ? absl::StrCat(position) : std::string("beginning"));
        {
          MutexLock lock(&queue_mu);
          states[{of, p.partition}] = Part{position, ++last_epoch};
          read_epochs[{of, p.partition}] = last_epoch;
        }
        MutexLock lock(&owner->stats_mu_);
        PartitionStats(of, p.partition).next_offset = std::max<int64_t>(position, 0);
      }
      rd_kafka_assign(rk, ours);
      rd_kafka_topic_partition_list_destroy(ours);
      Log(absl::StrCat("assigned partition(s) ", assigned));
    } else {
      // Revoked: what was gathered and not learned is read again by
      // whoever gets the partition, from the model's position.
      pending = Pending{};
      {
        // Batches queued for them are not learned here (another consumer
        // may own the partitions now).
        MutexLock lock(&queue_mu);
        queue.clear();
        states.clear();
        reread.clear();
        read_epochs.clear();
      }
      queue_cv.SignalAll();
      const bool lost = rd_kafka_assignment_lost(rk);
      rd_kafka_assign(rk, nullptr);
      Log(lost ? "partitions lost (the group session timed out); rejoining" : "partitions revoked");
    }
    MutexLock lock(&owner->stats_mu_);
    ++owner->stats_.rebalances;
    if (err != RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) owner->stats_.partitions.clear();
  }

  static void RebalanceCallback(rd_kafka_t*, rd_kafka_resp_err_t err,
                                rd_kafka_topic_partition_list_t* parts, void* opaque) {
    static_cast<Consumer*>(opaque)->OnRebalance(err, parts);
  }

  void Reject(const rd_kafka_message_t& m, const absl::Status& why) {
    Log(absl::StrCat(TopicPrefix(rd_kafka_topic_name(m.rkt)), "partition ", m.partition, " offset ",
                     m.offset, ": record refused, not learned: ", why.message()));
    DeadLetter(m, why);
    ++pending.rejected;
  }

  // Parses, checks and adds one record to the batch of its partition.
  void Take(const rd_kafka_message_t& m) {
    const size_t max_examples = std::min(owner->options_.max_batch_examples,
                                         owner->options_.limits.max_examples_per_update);
    const std::string_view of = rd_kafka_topic_name(m.rkt);
    if (m.partition != pending.partition || of != pending.topic) Flush();
    std::string_view bytes(static_cast<const char*>(m.payload), m.payload == nullptr ? 0 : m.len);
    const bool labels = of != topic;
    absl::StatusOr<ValidatedUpdate> update = absl::InternalError("unset");
    absl::StatusOr<std::vector<FeedbackItem>> items = absl::InternalError("unset");
    size_t size = 0;  // examples, or labels
    if (labels) {
      absl::StatusOr<v1::FeedbackRequest> request = ParseKafkaFeedbackRecord(
          owner->model_->model().config().kafka.feedback_format, bytes, owner->options_.limits);
      items = request.ok()
                  ? ValidateFeedbackRequest(*request, owner->options_.limits, WallNowMicros())
                  : absl::StatusOr<std::vector<FeedbackItem>>(request.status());
      if (items.ok()) size = items->size();
    } else {
      absl::StatusOr<v1::UpdateRequest> request = ParseKafkaRecord(
          owner->model_->model().config().kafka.format, bytes, owner->options_.limits);
      update = request.ok()
                   ? ValidateUpdateRequest(owner->model_->model(), *request, owner->options_.limits)
                   : absl::StatusOr<ValidatedUpdate>(request.status());
      if (update.ok()) size = update->batch.size();
    }
    const absl::Status checked = labels ? items.status() : update.status();
    if (checked.ok() && pending.examples + size > max_examples) Flush();
    if (pending.partition < 0) {
      pending.topic = std::string(of);
      pending.partition = m.partition;
      pending.epoch = read_epochs[{pending.topic, m.partition}];
      pending.started = std::chrono::steady_clock::now();
    }
    if (!checked.ok()) {
      Reject(m, checked);
    } else {
      pending.examples += size;
      pending.bytes += bytes.size();
      ++pending.records;
      if (labels) {
        pending.feedback_records.push_back(
            {m.offset, pending.items.size(), size, std::string(bytes),
             std::string(static_cast<const char*>(m.key), m.key == nullptr ? 0 : m.key_len)});
        pending.items.insert(pending.items.end(), items->begin(), items->end());
      } else {
        pending.updates.push_back(*std::move(update));
      }
    }
    pending.last_offset = m.offset;
    rd_kafka_timestamp_type_t type;
    pending.last_timestamp_ms = rd_kafka_message_timestamp(&m, &type);
    if (pending.examples >= max_examples || pending.bytes >= owner->options_.max_batch_bytes) {
      Flush();
    }
  }

  // Hands the batch being gathered to the learning thread, waiting while
  // kMaxQueued batches wait already.
  void Flush() {
    if (pending.partition < 0) return;
    {
      MutexLock lock(&queue_mu);
      while (queue.size() >= kMaxQueued) queue_cv.Wait(&queue_mu);
      queue.push_back(std::move(pending));
    }
    queue_cv.SignalAll();
    pending = Pending{};
  }

  // Waits until every batch handed over has been learned (or dropped at a
  // stop): then the model's positions are those of everything read.
  void Drain() {
    MutexLock lock(&queue_mu);
    while (!queue.empty() || learning) queue_cv.Wait(&queue_mu);
  }

  // The learning thread: learns the queued batches in order until `done`.
  void LearnQueued() {
    for (;;) {
      Pending batch;
      {
        MutexLock lock(&queue_mu);
        while (queue.empty() && !done) queue_cv.Wait(&queue_mu);
        if (queue.empty()) return;
        batch = std::move(queue.front());
        queue.pop_front();
        learning = true;
      }
      queue_cv.SignalAll();
      Learn(batch);
      {
        MutexLock lock(&queue_mu);
        learning = false;
      }
      queue_cv.SignalAll();
    }
  }

  // The position the partition's next batch starts at, if `pending` was
  // read in the partition's current epoch (otherwise it is dropped).
  std::optional<int64_t> StartOf(const Pending& pending) {
    MutexLock lock(&queue_mu);
    auto it = states.find({pending.topic, pending.partition});
    if (it == states.end() || it->second.epoch != pending.epoch) return std::nullopt;
    return it->second.position;
  }

  // After a batch another consumer (replica) learned first: the partition
  // is read again from the model's position, and what was read after the
  // batch is dropped.
  void ReadAgain(const std::string& of, int32_t partition) {
    const int64_t position = owner->model_->idempotency().Position(of, partition);
    {
      MutexLock lock(&queue_mu);
      auto it = states.find({of, partition});
      if (it == states.end()) return;
      it->second = Part{position, ++last_epoch};
      std::erase_if(queue,
                    [&](const Pending& p) { return p.partition == partition && p.topic == of; });
      reread.emplace_back(of, partition);
    }
    queue_cv.SignalAll();
    Log(absl::StrCat(TopicPrefix(of), "partition ", partition,
                     ": another consumer learned records first; reading "
                     "again from offset ",
                     position));
  }

  // Seeks the partitions ReadAgain named (the consuming thread).
  void SeekRereads() {
    std::vector<std::pair<PartitionId, Part>> seeks;
    {
      MutexLock lock(&queue_mu);
      for (const PartitionId& id : reread) {
        if (auto it = states.find(id); it != states.end()) seeks.emplace_back(id, it->second);
      }
      reread.clear();
    }
    for (const auto& [id, part] : seeks) {
      const auto& [of, partition] = id;
      read_epochs[id] = part.epoch;
      if (pending.partition == partition && pending.topic == of) pending = Pending{};
      rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
      rd_kafka_topic_partition_list_add(list, of.c_str(), partition)->offset =
          part.position >= 0 ? part.position : RD_KAFKA_OFFSET_BEGINNING;
      if (rd_kafka_error_t* error = rd_kafka_seek_partitions(rk, list, 5000); error != nullptr) {
        Log(absl::StrCat(TopicPrefix(of), "partition ", partition,
                         ": seek failed: ", rd_kafka_error_string(error)));
        rd_kafka_error_destroy(error);
      }
      rd_kafka_topic_partition_list_destroy(list);
    }
  }

  // Learns a batch as the range from its partition's position to its next
  // offset, retrying while the writer is unavailable (backpressure: the
  // queue fills, and the consumer stops polling).
  void Learn(const Pending& pending) {
    const int64_t next = pending.last_offset + 1;
    uint64_t learned = 0;
    uint64_t rejected = pending.rejected;
    uint64_t retries = 0;
    std::optional<int64_t> start = StartOf(pending);
    if (!start.has_value()) return;  // read before the partition was read again
    std::vector<TrainingExample> batch;
    if (pending.examples > 0 && pending.items.empty()) {
      batch.reserve(pending.examples);
      for (const ValidatedUpdate& u : pending.updates) {
        batch.insert(batch.end(), u.batch.begin(), u.batch.end());
      }
    }
    std::vector<JoinOutcome> outcomes;
    if (pending.examples > 0) {
      const SourcePosition position{pending.topic, pending.partition, *start, next,
                                    absl::StrCat(attempt_prefix, pending.epoch)};
      for (;;) {
        absl::Status status;
        bool duplicate = false;
        if (pending.items.empty()) {
          auto result = owner->writer_->LearnAt(*owner->model_, batch, position);
          status = result.status();
          duplicate = result.ok() && result->duplicate;
        } else {
          auto result = owner->writer_->ApplyFeedbackAt(*owner->model_, pending.items, position);
          status = result.status();
          duplicate = result.ok() && result->duplicate;
          if (result.ok()) outcomes = std::move(result->outcomes);
        }
        if (duplicate) {
          ReadAgain(pending.topic, pending.partition);
          return;
        }
        if (status.ok()) {
          learned = pending.records;
          MutexLock lock(&queue_mu);
          if (auto it = states.find({pending.topic, pending.partition});
              it != states.end() && it->second.epoch == pending.epoch) {
            it->second.position = next;
          }
          break;
        }
        if (!Retryable(status)) {
          // The next batch starts where this one did, and covers these
          // records as refused.
          Log(absl::StrCat(TopicPrefix(pending.topic), "partition ", pending.partition,
                           " offsets ..", pending.last_offset,
                           ": batch refused, not learned: ", status.message()));
          rejected += pending.records;
          break;
        }
        if (owner->stopping_.load() || !StartOf(pending).has_value()) {
          return;  // not learned: read again from the model's position
        }
        if (retries++ % 50 == 0) {
          Log(absl::StrCat("learning paused: ", status.message()));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    if (!outcomes.empty()) ReportLabels(pending, outcomes);
    CommitGroupOffset(pending, next);
    {
      MutexLock lock(&owner->stats_mu_);
      KafkaPartitionStats& p = PartitionStats(pending.topic, pending.partition);
      p.next_offset = next;
      p.last_timestamp_ms = pending.last_timestamp_ms;
      p.learned += learned;
      p.rejected += rejected;
      owner->stats_.learn_retries += retries;
    }
  }

  // Commits `next` as the group's offset of the batch's partition, for
  // Kafka's tools only (the model's position is what a restart resumes
  // at), and only while the partition is still assigned in the batch's
  // epoch. A commit for partitions already revoked (after a session
  // timeout: the broker was away longer than session.timeout.ms) would go
  // out with the member id librdkafka reset, and the broker answers a
  // static member's such commit with FENCED_INSTANCE_ID, which librdkafka
  // 2.0.2 makes a fatal error: the consumer would stop for good
  // (librdkafka PR #5585). The revoke clears `states` under queue_mu
  // before it unassigns, so a commit enqueued under queue_mu reaches
  // librdkafka before the unassign does.
  void CommitGroupOffset(const Pending& pending, int64_t next) {
    MutexLock lock(&queue_mu);
    auto it = states.find({pending.topic, pending.partition});
    if (it == states.end() || it->second.epoch != pending.epoch || rd_kafka_assignment_lost(rk)) {
      return;
    }
    rd_kafka_topic_partition_list_t* commit = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(commit, pending.topic.c_str(), pending.partition)->offset =
        next;
    rd_kafka_commit(rk, commit, /*async=*/1);
    rd_kafka_topic_partition_list_destroy(commit);
  }

  // Counts what became of a feedback batch's labels, and logs (and copies
  // to the dead-letter topic) each record with a label that was not joined
  // for a reason of the record's own: an id the model never issued,
  // another model's id, an impression labelled before. Such labels changed
  // nothing in the model.
  void ReportLabels(const Pending& pending, const std::vector<JoinOutcome>& outcomes) {
    {
      MutexLock lock(&owner->stats_mu_);
      for (JoinOutcome outcome : outcomes) {
        ++owner->stats_.feedback_items[static_cast<size_t>(outcome)];
      }
    }
    for (const FeedbackRecordRef& record : pending.feedback_records) {
      std::string reasons;
      for (size_t i = 0; i < record.items && record.first_item + i < outcomes.size(); ++i) {
        const JoinOutcome outcome = outcomes[record.first_item + i];
        if (outcome == JoinOutcome::kJoined || outcome == JoinOutcome::kExpired) continue;
        absl::StrAppend(&reasons, reasons.empty() ? "" : "; ", "items[", i, "] (impression id ",
                        pending.items[record.first_item + i].impression_id, ") is ",
                        v1::FeedbackStatus_Name(ToFeedbackStatus(outcome)));
      }
      if (reasons.empty()) continue;
      const absl::Status why =
          absl::FailedPreconditionError(absl::StrCat(reasons, "; not learned"));
      Log(absl::StrCat(TopicPrefix(pending.topic), "partition ", pending.partition, " offset ",
                       record.offset, ": label not joined: ", why.message()));
      DeadLetter(pending.topic, pending.partition, record.offset, record.value, record.key, why);
    }
  }

  // Copies librdkafka's latest known partition ends into the stats.
  void UpdateWatermarks() {
    MutexLock lock(&owner->stats_mu_);
    for (KafkaPartitionStats& p : owner->stats_.partitions) {
      int64_t low = 0, high = 0;
      if (rd_kafka_get_watermark_offsets(rk, p.topic.c_str(), p.partition, &low, &high) ==
              RD_KAFKA_RESP_ERR_NO_ERROR &&
          high >= 0) {
        p.high_watermark = high;
        if (p.next_offset < 0) p.next_offset = low;
      }
    }
  }

  void Loop() {
    rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(2);
    rd_kafka_topic_partition_list_add(topics, topic.c_str(), RD_KAFKA_PARTITION_UA);
    if (!feedback_topic.empty()) {
      rd_kafka_topic_partition_list_add(topics, feedback_topic.c_str(), RD_KAFKA_PARTITION_UA);
    }
    if (rd_kafka_resp_err_t err = rd_kafka_subscribe(rk, topics);
        err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      Log(absl::StrCat("subscribe failed: ", rd_kafka_err2str(err)));
    }
    rd_kafka_topic_partition_list_destroy(topics);
    std::thread learner([this] { LearnQueued(); });
    const auto linger = owner->options_.linger;
    auto last_watermarks = std::chrono::steady_clock::now();
    while (!owner->stopping_.load() && !fatal.load()) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, static_cast<int>(linger.count()));
      if (m == nullptr) {
        Flush();
      } else {
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
          Take(*m);
        } else if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
          OnFatal();
        } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
          Log(absl::StrCat("consumer: ", rd_kafka_message_errstr(m)));
        }
        rd_kafka_message_destroy(m);
        if (pending.partition >= 0 &&
            std::chrono::steady_clock::now() - pending.started >= linger) {
          Flush();
        }
      }
      SeekRereads();
      if (dead_letters != nullptr) rd_kafka_poll(dead_letters, 0);
      if (std::chrono::steady_clock::now() - last_watermarks >= std::chrono::milliseconds(250)) {
        UpdateWatermarks();
        last_watermarks = std::chrono::steady_clock::now();
      }
    }
    Flush();
    {
      MutexLock lock(&queue_mu);
      done = true;
    }
    queue_cv.SignalAll();
    learner.join();
    rd_kafka_consumer_close(rk);
    // What is still queued gets a few seconds to reach the broker (here,
    // while the source's stats that delivery reports count still exist).
    if (dead_letters != nullptr) rd_kafka_flush(dead_letters, 5000);
  }

  // A fatal error (as a consumer message or to the error callback): the
  // loop ends and the source is started again.
  void OnFatal() {
    if (fatal.exchange(true)) return;
    char reason[512] = "";
    rd_kafka_fatal_error(rk, reason, sizeof(reason));
    Log(absl::StrCat("the consumer stopped on a fatal error (", reason,
                     "); it starts again from the model's positions"));
  }

  // Errors librdkafka reports (served by the polls of the consuming
  // thread). An authentication failure names the settings it came from.
  static void ErrorCallback(rd_kafka_t*, int err, const char* reason, void* opaque) {
    auto* self = static_cast<Consumer*>(opaque);
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
      self->OnFatal();
      return;
    }
    if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION) {
      self->Log(absl::StrCat("authentication to the brokers failed",
                             self->sasl_setting.empty() ? "" : " (" + self->sasl_setting + ")",
                             ": ", reason));
      MutexLock lock(&self->owner->stats_mu_);
      ++self->owner->stats_.authentication_failures;
      return;
    }
    self->Log(absl::StrCat("broker: ", rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(err)),
                           ": ", reason));
  }
};

namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

// The username and password of a SASL credentials file: "username=..."
// and "password=..." lines (blank lines and lines starting with # are
// skipped). Errors name the setting and the path, never the contents.
absl::StatusOr<std::pair<std::string, std::string>> ReadCredentials(const std::string& path) {
  const std::string setting = absl::StrCat("kafka.sasl_credentials_file ", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::FailedPreconditionError(
        absl::StrCat(setting, ": cannot be read (", std::strerror(errno), ")"));
  }
  std::string text(kMaxKafkaCredentialsFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxKafkaCredentialsFileBytes) {
    return absl::FailedPreconditionError(
        absl::StrCat(setting, " is over the limit of ", kMaxKafkaCredentialsFileBytes, " bytes"));
  }
  std::string username, password;
  bool has_username = false, has_password = false;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripTrailingAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    if (absl::ConsumePrefix(&line, "username=")) {
      username = std::string(line);
      has_username = true;
    } else if (absl::ConsumePrefix(&line, "password=")) {
      password = std::string(line);
      has_password = true;
    } else {
      return absl::FailedPreconditionError(
          absl::StrCat(setting, ": line ", number, " is neither username=... nor password=..."));
    }
  }
  if (!has_username || username.empty() || !has_password) {
    return absl::FailedPreconditionError(
        absl::StrCat(setting, " needs a username=... line and a password=... line"));
  }
  return std::make_pair(username, password);
}

// The settings every client of a source takes: brokers, TLS and SASL. With
// SASL, `described` gets what names the credentials in errors.
absl::StatusOr<Settings> ConnectionSettings(const KafkaSourceConfig& k, std::string* described) {
  Settings settings = {
      {"bootstrap.servers", k.brokers},
      {"security.protocol", k.security_protocol.empty() ? "plaintext" : k.security_protocol},
  };
  if (!k.ssl_ca_location.empty()) settings.emplace_back("ssl.ca.location", k.ssl_ca_location);
  if (!k.sasl_mechanism.empty()) {
    auto credentials = ReadCredentials(k.sasl_credentials_file);
    if (!credentials.ok()) return credentials.status();
    settings.emplace_back("sasl.mechanisms", k.sasl_mechanism);
    settings.emplace_back("sasl.username", credentials->first);
    settings.emplace_back("sasl.password", credentials->second);
    *described =
        absl::StrCat("kafka.sasl_mechanism ", k.sasl_mechanism, ", user \"", credentials->first,
                     "\" from kafka.sasl_credentials_file ", k.sasl_credentials_file);
  }
  return settings;
}

// The producer of a source's dead-letter topic, with the consumer's
// brokers and security settings.
absl::Status StartDeadLetters(const KafkaSourceConfig& k, const std::string& model,
                              KafkaSource::Consumer* consumer) {
  std::string described;
  absl::StatusOr<Settings> connection = ConnectionSettings(k, &described);
  if (!connection.ok()) return connection.status();
  Settings settings = *std::move(connection);
  settings.insert(settings.end(),
                  {
                      {"client.id", absl::StrCat("clickd-", model, "-dead-letters")},
                      {"linger.ms", "20"},
                      // Bounded: at most this much of refused records waits for the broker.
                      {"queue.buffering.max.kbytes", "16384"},
                  });
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (const auto& [name, value] : settings) {
    if (absl::Status s = SetConf(conf, name, value); !s.ok()) {
      rd_kafka_conf_destroy(conf);
      return s;
    }
  }
  rd_kafka_conf_set_dr_msg_cb(conf, &KafkaSource::Consumer::DeliveryCallback);
  rd_kafka_conf_set_error_cb(conf, &KafkaSource::Consumer::ErrorCallback);
  rd_kafka_conf_set_opaque(conf, consumer);
  char error[512];
  consumer->dead_letters = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof(error));
  if (consumer->dead_letters == nullptr) {
    rd_kafka_conf_destroy(conf);
    return absl::InvalidArgumentError(absl::StrCat("kafka dead-letter producer: ", error));
  }
  consumer->dead_letter_topic = k.dead_letter_topic;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<KafkaSource>> KafkaSource::Start(std::shared_ptr<ServedModel> model,
                                                                ModelWriter* writer,
                                                                const KafkaSourceOptions& options) {
  const KafkaSourceConfig& k = model->model().config().kafka;
  if (!k.enabled()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model \"", model->name(), "\" has no Kafka source"));
  }
  auto consumer = std::make_unique<Consumer>();
  consumer->topic = k.topic;
  consumer->feedback_topic = k.feedback_topic;
  absl::StatusOr<Settings> connection = ConnectionSettings(k, &consumer->sasl_setting);
  if (!connection.ok()) return connection.status();
  consumer->attempt_prefix =
      absl::StrCat(options.instance, ".", std::random_device{}() ^ (NowMs() << 16), ".");
  consumer->model = model->name();
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  const std::string group =
      k.group.empty() ? absl::StrCat("clickd-", model->name(), "-", k.topic) : k.group;
  Settings settings = *std::move(connection);
  settings.insert(
      settings.end(),
      {
          {"group.id", group},
          {"client.id", absl::StrCat("clickd-", model->name())},
          // Static membership: a clickd restarted after a crash takes its
          // partitions back at once instead of after the dead member's session
          // timeout. One process per model and group (docs/kafka.md).
          // Replicas share the group (each partition is consumed by one of
          // them), each with its own instance id.
          {"group.instance.id",
           absl::StrCat(group, "-", model->name(),
                        options.instance.empty() ? "" : absl::StrCat("-", options.instance))},
          {"session.timeout.ms", "10000"},
          {"enable.auto.commit", "false"},
          {"enable.auto.offset.store", "false"},
          {"auto.offset.reset", "earliest"},
          {"enable.partition.eof", "false"},
          {"queued.max.messages.kbytes", absl::StrCat(options.queued_max_kbytes)},
          {"fetch.wait.max.ms", "100"},
          // A topic created after the source started (a feedback topic
          // that gets its first label later) is found within this, not
          // librdkafka's default 5 minutes.
          {"topic.metadata.refresh.interval.ms", "5000"},
      });
  for (const auto& [name, value] : settings) {
    if (absl::Status s = SetConf(conf, name, value); !s.ok()) {
      rd_kafka_conf_destroy(conf);
      return s;
    }
  }
  rd_kafka_conf_set_rebalance_cb(conf, &Consumer::RebalanceCallback);
  rd_kafka_conf_set_error_cb(conf, &Consumer::ErrorCallback);
  rd_kafka_conf_set_opaque(conf, consumer.get());
  char error[512];
  consumer->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, error, sizeof(error));
  if (consumer->rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return absl::InvalidArgumentError(absl::StrCat("kafka consumer: ", error));
  }
  rd_kafka_poll_set_consumer(consumer->rk);
  if (!k.dead_letter_topic.empty()) {
    if (absl::Status s = StartDeadLetters(k, model->name(), consumer.get()); !s.ok()) return s;
  }
  return std::unique_ptr<KafkaSource>(
      new KafkaSource(std::move(model), writer, options, std::move(consumer)));
}

KafkaSource::KafkaSource(std::shared_ptr<ServedModel> model, ModelWriter* writer,
                         KafkaSourceOptions options, std::unique_ptr<Consumer> consumer)
    : model_(std::move(model)),
      writer_(writer),
      options_(std::move(options)),
      consumer_(std::move(consumer)) {
  {
    MutexLock lock(&stats_mu_);
    stats_.topic = consumer_->topic;
    stats_.feedback_topic = consumer_->feedback_topic;
    stats_.dead_letter = consumer_->dead_letters != nullptr;
  }
  consumer_->owner = this;
  thread_ = std::thread([this] { Run(); });
}

KafkaSource::~KafkaSource() {
  stopping_.store(true);
  thread_.join();
}

void KafkaSource::Run() { consumer_->Loop(); }

bool KafkaSource::failed() const { return consumer_->fatal.load(); }

KafkaSourceStats KafkaSource::Stats() const {
  MutexLock lock(&stats_mu_);
  return stats_;
}

KafkaSources::KafkaSources(ModelRegistry* registry, ModelWriter* writer, KafkaSourceOptions options,
                           metrics::Registry* metrics, std::chrono::milliseconds period)
    : registry_(registry), writer_(writer), options_(std::move(options)), period_(period) {
  if (metrics != nullptr) RegisterMetrics(metrics);
  thread_ = std::thread([this] { Run(); });
}

KafkaSources::~KafkaSources() { Stop(); }

void KafkaSources::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.SignalAll();
  if (thread_.joinable()) thread_.join();
  std::map<std::string, std::unique_ptr<KafkaSource>> sources;
  {
    MutexLock lock(&mu_);
    sources.swap(sources_);
  }
  sources.clear();  // each joins its thread
}

void KafkaSources::Run() {
  for (;;) {
    Reconcile();
    MutexLock lock(&mu_);
    if (!stopping_) wake_.WaitFor(&mu_, period_);
    if (stopping_) return;
  }
}

void KafkaSources::Reconcile() {
  std::vector<std::unique_ptr<KafkaSource>> stopped;
  std::vector<std::shared_ptr<ServedModel>> to_start;
  {
    MutexLock lock(&mu_);
    const auto now = std::chrono::steady_clock::now();
    for (auto it = sources_.begin(); it != sources_.end();) {
      const std::shared_ptr<ServedModel> current = registry_->Get(it->first);
      if (current.get() != it->second->model() || it->second->failed()) {
        // A source whose consumer failed starts again, not at once: a
        // failure that repeats (two processes sharing a model's group)
        // does not spin.
        if (it->second->failed()) restart_after_[it->first] = now + kRestartDelay;
        stopped.push_back(std::move(it->second));
        it = sources_.erase(it);
      } else {
        ++it;
      }
    }
    for (const std::shared_ptr<ServedModel>& served : registry_->List()) {
      if (auto wait = restart_after_.find(served->name()); wait != restart_after_.end()) {
        if (now < wait->second) continue;
        restart_after_.erase(wait);
      }
      if (served->model().config().kafka.enabled() && !sources_.contains(served->name())) {
        to_start.push_back(served);
      }
    }
  }
  stopped.clear();  // a deleted model's source stops outside the lock
  for (std::shared_ptr<ServedModel>& served : to_start) {
    const std::string name = served->name();
    auto source = KafkaSource::Start(std::move(served), writer_, options_);
    MutexLock lock(&mu_);
    if (!source.ok()) {
      // Tried again every period; logged when the reason changes.
      std::string& last = start_errors_[name];
      if (last != source.status().message()) {
        last = std::string(source.status().message());
        std::cerr << "clickd: kafka model \"" << name << "\": the source does not start: " << last
                  << "; trying again every " << period_.count() << " ms" << std::endl;
      }
      continue;
    }
    start_errors_.erase(name);
    sources_.emplace(name, *std::move(source));
  }
}

std::vector<std::pair<std::string, KafkaSourceStats>> KafkaSources::Stats() const {
  std::vector<std::pair<std::string, KafkaSourceStats>> out;
  MutexLock lock(&mu_);
  for (const auto& [name, source] : sources_) out.emplace_back(name, source->Stats());
  return out;
}

void KafkaSources::RegisterMetrics(metrics::Registry* metrics) {
  using metrics::Sample;
  // One series per model, topic and partition, from `value`.
  auto per_partition = [this](auto value) {
    return [this, value] {
      std::vector<Sample> samples;
      const int64_t now_ms = NowMs();
      for (const auto& [model, stats] : Stats()) {
        for (const KafkaPartitionStats& p : stats.partitions) {
          samples.push_back(
              {{{"model", model}, {"topic", p.topic}, {"partition", absl::StrCat(p.partition)}},
               value(p, now_ms)});
        }
      }
      return samples;
    };
  };
  metrics->BuildCallback(
      "clickd_kafka_lag_records",
      "Records of the partition not yet learned by the model: the partition's end as last "
      "fetched minus the model's position.",
      metrics::MetricType::kGauge, per_partition([](const KafkaPartitionStats& p, int64_t) {
        return p.high_watermark < 0 || p.next_offset < 0
                   ? 0.0
                   : static_cast<double>(std::max<int64_t>(0, p.high_watermark - p.next_offset));
      }));
  metrics->BuildCallback(
      "clickd_kafka_lag_seconds",
      "While the partition has records not yet learned: seconds since the timestamp of the last "
      "record the model read from it (0 when caught up).",
      metrics::MetricType::kGauge, per_partition([](const KafkaPartitionStats& p, int64_t now_ms) {
        const bool behind = p.high_watermark >= 0 && p.high_watermark > p.next_offset;
        if (!behind || p.last_timestamp_ms <= 0) return 0.0;
        return std::max(0.0, static_cast<double>(now_ms - p.last_timestamp_ms) / 1000.0);
      }));
  metrics->BuildCallback(
      "clickd_kafka_position",
      "The offset of the next record the model learns from the partition (its durable position).",
      metrics::MetricType::kGauge, per_partition([](const KafkaPartitionStats& p, int64_t) {
        return static_cast<double>(p.next_offset);
      }));
  metrics->BuildCallback("clickd_kafka_records_learned_total",
                         "Records of the partition the model learned since the process started.",
                         metrics::MetricType::kCounter,
                         per_partition([](const KafkaPartitionStats& p, int64_t) {
                           return static_cast<double>(p.learned);
                         }));
  metrics->BuildCallback(
      "clickd_kafka_records_rejected_total",
      "Records of the partition refused (unparsable, over a limit, a label the loss refuses) "
      "since the process started; each is logged with its offset and reason.",
      metrics::MetricType::kCounter, per_partition([](const KafkaPartitionStats& p, int64_t) {
        return static_cast<double>(p.rejected);
      }));
  metrics->BuildCallback("clickd_kafka_rebalances_total",
                         "Partition assignments and revocations of the model's consumer.",
                         metrics::MetricType::kCounter, [this] {
                           std::vector<Sample> samples;
                           for (const auto& [model, stats] : Stats()) {
                             samples.push_back({{{"model", model}, {"topic", stats.topic}},
                                                static_cast<double>(stats.rebalances)});
                           }
                           return samples;
                         });
  metrics->BuildCallback(
      "clickd_kafka_feedback_items_total",
      "Labels read from the source's feedback topic, by what became of them (the Feedback RPC's "
      "statuses: joined, unknown, expired, already_labelled, other_model).",
      metrics::MetricType::kCounter, [this] {
        std::vector<Sample> samples;
        for (const auto& [model, stats] : Stats()) {
          if (stats.feedback_topic.empty()) continue;
          for (JoinOutcome outcome :
               {JoinOutcome::kJoined, JoinOutcome::kUnknown, JoinOutcome::kExpired,
                JoinOutcome::kAlreadyLabelled, JoinOutcome::kOtherModel}) {
            samples.push_back(
                {{{"model", model},
                  {"topic", stats.feedback_topic},
                  {"outcome", std::string(JoinOutcomeName(outcome))}},
                 static_cast<double>(stats.feedback_items[static_cast<size_t>(outcome)])});
          }
        }
        return samples;
      });
  metrics->BuildCallback(
      "clickd_kafka_authentication_failures_total",
      "Authentication failures (SASL, TLS) the source's brokers reported; each is logged naming "
      "the settings used.",
      metrics::MetricType::kCounter, [this] {
        std::vector<Sample> samples;
        for (const auto& [model, stats] : Stats()) {
          samples.push_back({{{"model", model}, {"topic", stats.topic}},
                             static_cast<double>(stats.authentication_failures)});
        }
        return samples;
      });
  metrics->BuildCallback(
      "clickd_kafka_dead_letters_total",
      "Refused records copied to the source's dead-letter topic (outcome=written: the broker "
      "acknowledged the copy; failed: it could not be written).",
      metrics::MetricType::kCounter, [this] {
        std::vector<Sample> samples;
        for (const auto& [model, stats] : Stats()) {
          if (!stats.dead_letter) continue;
          samples.push_back({{{"model", model}, {"topic", stats.topic}, {"outcome", "written"}},
                             static_cast<double>(stats.dead_lettered)});
          samples.push_back({{{"model", model}, {"topic", stats.topic}, {"outcome", "failed"}},
                             static_cast<double>(stats.dead_letter_failures)});
        }
        return samples;
      });
}

}  // namespace clickd
