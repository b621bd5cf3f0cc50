// ModelRegistry: the named models one process serves.
//
// Get() returns a ref-counted handle (TF Serving's ServableHandle idea): a
// request keeps its model alive while it runs, so Delete never waits for
// requests and a request never sees a half-deleted model.
//
// With a data directory every model is durable: it lives in
// <data_dir>/models/<name>/ (core/persist/model_journal.h), Create makes
// that directory, Delete removes it, and Recover restores every model found
// there when the process starts.
//
// Thread safety: safe for concurrent access. The map is guarded by one
// reader/writer lock, held only to copy or swap a shared_ptr; creates and
// deletes also serialize on a second lock, held across their disk work, so
// that two of them never race on one directory.
#ifndef CLICKD_CORE_SERVING_REGISTRY_H_
#define CLICKD_CORE_SERVING_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/model/model.h"
#include "core/persist/model_journal.h"
#include "core/serving/served_model.h"

namespace clickd {

struct DurabilityOptions {
  // Empty: models live in memory only.
  std::string data_dir;
  // For every model's journal. journal.log.on_sync is replaced per model by
  // what sync_observer returns.
  JournalOptions journal;
  // If set, called once per durable model (at create or restore) for the
  // observer of that model's update-log sync latencies.
  std::function<std::function<void(double seconds)>(const std::string& model)> sync_observer;
  // If set, called after every snapshot attempt of every durable model.
  SnapshotObserver on_snapshot;
};

// Limits on what callers can make a registry hold.
struct RegistryLimits {
  // Create refuses a model beyond this many (ResourceExhausted). Recover
  // restores every model on disk regardless: they hold acknowledged data.
  size_t max_models = 256;
  // If set, Recover asks it of each stored model's config before building
  // the model, and fails (naming the model) with what it returns: a model
  // whose fixed memory is over the server's bound is not allocated.
  std::function<absl::Status(const ModelConfig&)> admit_stored;
};

// One model Recover restored, for the startup log and the metrics.
struct RecoveredModel {
  std::string name;
  RecoveryReport report;
};

class ModelRegistry {
 public:
  explicit ModelRegistry(DurabilityOptions options = {}, RegistryLimits limits = {});

  bool durable() const { return !options_.data_dir.empty(); }
  // The data directory ("" for memory-only models).
  const std::string& data_dir() const { return options_.data_dir; }

  // Restores every model under <data_dir>/models (none without a data
  // directory). Directories without a MODEL file (an interrupted create or
  // delete) are skipped. Any model that cannot be restored fails the whole
  // call, naming its directory: a server must not come up without a model
  // it had acknowledged updates for. Call before serving.
  absl::StatusOr<std::vector<RecoveredModel>> Recover();

  // Builds and adds a model (durable with a data directory). AlreadyExists
  // if the name is taken; InvalidArgument for a bad config;
  // ResourceExhausted at limits.max_models; Unavailable if its directory
  // cannot be written.
  absl::StatusOr<std::shared_ptr<ServedModel>> Create(const ModelConfig& config);

  // Returns the model, or nullptr if there is none by that name.
  std::shared_ptr<ServedModel> Get(std::string_view name) const;

  // Removes a model and its directory; requests holding a handle finish on
  // it: learning into a durable model fails from now on (its journal is
  // closed), while a memory-only one still learns, into a model no one can
  // reach again. NotFound if absent.
  absl::Status Delete(std::string_view name);

  // Every model, ordered by name.
  std::vector<std::shared_ptr<ServedModel>> List() const;

  size_t size() const;

 private:
  std::string ModelDir(std::string_view name) const;
  JournalOptions JournalOptionsFor(const std::string& name) const;
  // Adds a model to the map; AlreadyExists if the name is taken.
  absl::Status Insert(std::shared_ptr<ServedModel> served);

  const DurabilityOptions options_;
  const RegistryLimits limits_;
  Mutex admin_mu_;  // serializes Create, Delete and Recover
  mutable Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<ServedModel>> models_ ABSL_GUARDED_BY(mu_);
};

}  // namespace clickd

#endif  // CLICKD_CORE_SERVING_REGISTRY_H_
