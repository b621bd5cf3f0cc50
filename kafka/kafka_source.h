// KafkaSource: one model learning from a Kafka topic, exactly once
// (docs/kafka.md). A thread consumes the topic with librdkafka in the
// model's consumer group, turns each record into a clickd.v1.UpdateRequest
// (VW line, JSON or protobuf bytes), checks it exactly as the Update RPC
// does (ValidateUpdateRequest with the server's Limits, plus the message
// size), and learns the records of one partition in batches through the
// ModelWriter, each batch under the position key of the partition's next
// offset (IdempotencyWindow::PositionKey). The position is thus written in
// the same update-log record as the examples it covers and restored with
// them (log replay, snapshots): on every (re)assignment the consumer seeks
// each partition to the model's own position, whatever offsets the group
// has committed in Kafka. The group's Kafka offsets are committed after
// each batch too, for Kafka's own lag tools only.
//
// With a feedback topic the same consumer reads it too: each record is a
// clickd.v1.FeedbackRequest, checked as the Feedback RPC checks one, and
// a batch of one partition's labels is joined to the impressions the model
// logged (ModelWriter::ApplyFeedbackAt) under that partition's position
// key, exactly as an examples batch is learned.
//
// A record that does not parse or that the checks refuse is counted, logged
// with topic/partition/offset and the reason, and skipped; it never stops
// the consumer. Backpressure: a learning thread per source learns the
// batches in order while the consuming thread parses and checks the next;
// at most two batches wait between them, then the consumer stops polling,
// so a slow model slows only its own consumer. librdkafka's prefetch queue
// is bounded (queued.max.messages.kbytes) and so is a batch.
//
// KafkaSources keeps one KafkaSource per model whose config has a source,
// starting and stopping them as models come and go, and exports the
// clickd_kafka_* metrics.
//
// Thread safety: KafkaSource's Stats() may be called from any thread; the
// rest is owned by the thread that built it. KafkaSources: construct and
// destroy on one thread; its metrics callbacks may run concurrently.
#ifndef CLICKD_KAFKA_KAFKA_SOURCE_H_
#define CLICKD_KAFKA_KAFKA_SOURCE_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/serving/registry.h"
#include "core/serving/served_model.h"
#include "server/limits.h"
#include "server/metrics/registry.h"
#include "server/model_writer.h"

namespace clickd {

struct KafkaSourceOptions {
  Limits limits;  // the RPCs' limits, applied to every record
  // A batch ends at this many examples (at most limits.max_examples_per_update),
  // at this many record bytes, at a change of partition, or when no record
  // arrives within `linger`.
  size_t max_batch_examples = 2000;
  size_t max_batch_bytes = 4 << 20;
  std::chrono::milliseconds linger{20};
  // librdkafka's prefetch bound per consumer (queued.max.messages.kbytes).
  int queued_max_kbytes = 8192;
  // This process among the consumers of the model's group: the replica id
  // under --replication=jetstream (each partition is consumed by one
  // replica at a time), empty otherwise. Part of group.instance.id.
  std::string instance;
};

// One partition's figures, for the metrics and the status page.
struct KafkaPartitionStats {
  std::string topic;  // the examples topic or the feedback topic
  int32_t partition = 0;
  int64_t next_offset = -1;       // the next record to learn (-1: none read yet)
  int64_t high_watermark = -1;    // the partition's end as last fetched
  int64_t last_timestamp_ms = 0;  // of the last record read
  uint64_t learned = 0;           // records learned
  uint64_t rejected = 0;          // records refused
};

struct KafkaSourceStats {
  std::string topic;
  std::string feedback_topic;                   // empty: none
  std::vector<KafkaPartitionStats> partitions;  // by topic and partition
  uint64_t rebalances = 0;
  uint64_t learn_retries = 0;  // batches the writer refused and were retried
  // Refused records copied to the dead-letter topic (delivered), and those
  // that could not be (queue full, broker error).
  bool dead_letter = false;  // the source has a dead-letter topic
  uint64_t dead_lettered = 0;
  uint64_t dead_letter_failures = 0;
  // The feedback topic's items by what became of them, indexed by
  // JoinOutcome (kJoined, kUnknown, kExpired, kAlreadyLabelled,
  // kOtherModel).
  std::array<uint64_t, 5> feedback_items{};
  // Authentication failures the brokers reported (SASL, TLS).
  uint64_t authentication_failures = 0;
};

class KafkaSource {
 public:
  // Starts consuming at once. `model` is the served model, `writer` what
  // learns into it; both must outlive the source.
  static absl::StatusOr<std::unique_ptr<KafkaSource>> Start(std::shared_ptr<ServedModel> model,
                                                            ModelWriter* writer,
                                                            const KafkaSourceOptions& options);
  ~KafkaSource();  // stops the thread and closes the consumer
  KafkaSource(const KafkaSource&) = delete;
  KafkaSource& operator=(const KafkaSource&) = delete;

  const ServedModel* model() const { return model_.get(); }
  KafkaSourceStats Stats() const;
  // Whether the consumer stopped on a fatal error (then the thread has
  // ended; KafkaSources starts a new source).
  bool failed() const;

  // The consumer's internals (kafka_source.cc).
  struct Consumer;

 private:
  KafkaSource(std::shared_ptr<ServedModel> model, ModelWriter* writer, KafkaSourceOptions options,
              std::unique_ptr<Consumer> consumer);
  void Run();

  const std::shared_ptr<ServedModel> model_;
  ModelWriter* const writer_;
  const KafkaSourceOptions options_;
  const std::unique_ptr<Consumer> consumer_;
  std::atomic<bool> stopping_{false};
  mutable Mutex stats_mu_;
  KafkaSourceStats stats_ ABSL_GUARDED_BY(stats_mu_);
  std::thread thread_;

  friend struct KafkaSourceInternals;
};

class KafkaSources {
 public:
  // Checks the registry every `period` for models with a Kafka source.
  // `registry`, `writer` and `metrics` (may be null) must outlive this.
  KafkaSources(ModelRegistry* registry, ModelWriter* writer, KafkaSourceOptions options,
               metrics::Registry* metrics,
               std::chrono::milliseconds period = std::chrono::milliseconds(500));
  ~KafkaSources();  // Stop()s
  // Stops every source and starts none again; Stats() is then empty. The
  // object stays, so that a scrape of its metrics (or the status page) may
  // still read it. Call on the thread that built it.
  void Stop();
  KafkaSources(const KafkaSources&) = delete;
  KafkaSources& operator=(const KafkaSources&) = delete;

  // Each running source's model name and figures.
  std::vector<std::pair<std::string, KafkaSourceStats>> Stats() const;

 private:
  void Run();
  // Starts sources for new models with one, stops those of models gone.
  void Reconcile();
  void RegisterMetrics(metrics::Registry* metrics);

  ModelRegistry* const registry_;
  ModelWriter* const writer_;
  const KafkaSourceOptions options_;
  const std::chrono::milliseconds period_;
  mutable Mutex mu_;
  CondVar wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::unique_ptr<KafkaSource>> sources_ ABSL_GUARDED_BY(mu_);
  // A failed source is started again after this.
  static constexpr std::chrono::seconds kRestartDelay{2};
  // Models whose source failed, and when it may start again.
  std::map<std::string, std::chrono::steady_clock::time_point> restart_after_ ABSL_GUARDED_BY(mu_);
  // The last reason each model's source did not start, logged once.
  std::map<std::string, std::string> start_errors_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace clickd

#endif  // CLICKD_KAFKA_KAFKA_SOURCE_H_
