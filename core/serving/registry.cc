#include "core/serving/registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/quote.h"

namespace clickd {

ModelRegistry::ModelRegistry(DurabilityOptions options, RegistryLimits limits)
    : options_(std::move(options)), limits_(limits) {}

std::string ModelRegistry::ModelDir(std::string_view name) const {
  return absl::StrCat(options_.data_dir, "/models/", std::string(name));
}

JournalOptions ModelRegistry::JournalOptionsFor(const std::string& name) const {
  JournalOptions journal = options_.journal;
  journal.log.on_sync = options_.sync_observer ? options_.sync_observer(name) : nullptr;
  return journal;
}

absl::Status ModelRegistry::Insert(std::shared_ptr<ServedModel> served) {
  MutexLock lock(&mu_);
  const std::string& name = served->name();
  auto [it, inserted] = models_.try_emplace(name, std::move(served));
  if (!inserted)
    return absl::AlreadyExistsError(absl::StrCat("model \"", name, "\" already exists"));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RecoveredModel>> ModelRegistry::Recover() {
  std::vector<RecoveredModel> recovered;
  if (!durable()) return recovered;
  MutexLock admin(&admin_mu_);
  Env* env = options_.journal.env;
  const std::string models_dir = options_.data_dir + "/models";
  if (absl::Status s = env->CreateDirs(models_dir); !s.ok()) return s;
  if (absl::Status s = ModelJournal::RemoveTombstones(env, models_dir); !s.ok()) return s;
  auto names = env->ListDir(models_dir);
  if (!names.ok()) return names.status();
  std::sort(names->begin(), names->end());
  for (const std::string& name : *names) {
    const std::string dir = ModelDir(name);
    if (!env->FileExists(dir + "/MODEL")) continue;
    if (limits_.admit_stored) {
      // A MODEL file that cannot be read is reported by Open below.
      auto config = ModelJournal::ReadConfig(env, dir);
      if (config.ok()) {
        if (absl::Status s = limits_.admit_stored(*config); !s.ok()) {
          return absl::Status(s.code(),
                              absl::StrCat("cannot restore model \"", name, "\" from ", dir, ": ",
                                           s.message(), "; nothing was allocated for it"));
        }
      }
    }
    auto opened = ModelJournal::Open(dir, JournalOptionsFor(name));
    if (!opened.ok()) {
      return absl::Status(opened.status().code(),
                          absl::StrCat("cannot restore model \"", name, "\" from ", dir, ": ",
                                       opened.status().message()));
    }
    if (opened->model->config().name != name) {
      return absl::DataLossError(absl::StrCat(dir, " holds model \"", opened->model->config().name,
                                              "\", not \"", name, "\""));
    }
    recovered.push_back({name, opened->report});
    auto served = std::make_shared<ServedModel>(
        std::move(opened->model), std::move(opened->journal), opened->report, options_.on_snapshot,
        SteadyNow, std::move(opened->feedback), WallNowMicros, std::move(opened->idempotency),
        opened->calibration);
    if (absl::Status s = Insert(std::move(served)); !s.ok()) return s;
  }
  return recovered;
}

absl::StatusOr<std::shared_ptr<ServedModel>> ModelRegistry::Create(const ModelConfig& config) {
  // Build outside the map's lock: creating a model allocates its shards.
  auto model = CreateModel(config);
  if (!model.ok()) return model.status();
  MutexLock admin(&admin_mu_);
  if (Get(config.name) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("model \"", config.name, "\" already exists"));
  }
  if (const size_t held = size(); held >= limits_.max_models) {
    return absl::ResourceExhaustedError(absl::StrCat("the server holds ", held,
                                                     " models; the limit is ", limits_.max_models,
                                                     " (--max_models)"));
  }
  std::shared_ptr<ServedModel> served;
  if (durable()) {
    auto journal =
        ModelJournal::Create(ModelDir(config.name), config, JournalOptionsFor(config.name));
    if (!journal.ok()) {
      return absl::UnavailableError(absl::StrCat("cannot create model \"", config.name,
                                                 "\" on disk: ", journal.status().message()));
    }
    served = std::make_shared<ServedModel>(
        *std::move(model), *std::move(journal), RecoveryReport{}, options_.on_snapshot, SteadyNow,
        nullptr, WallNowMicros, std::make_unique<IdempotencyWindow>(options_.journal.idempotency));
  } else {
    // Memory-only models report snapshots too: a replica snapshots them
    // (ServedModel::RecordSnapshot).
    served = std::make_shared<ServedModel>(
        *std::move(model), nullptr, RecoveryReport{}, options_.on_snapshot, SteadyNow, nullptr,
        WallNowMicros, std::make_unique<IdempotencyWindow>(options_.journal.idempotency));
  }
  if (absl::Status s = Insert(served); !s.ok()) return s;
  return served;
}

std::shared_ptr<ServedModel> ModelRegistry::Get(std::string_view name) const {
  ReaderMutexLock lock(&mu_);
  auto it = models_.find(absl::string_view(name.data(), name.size()));
  return it == models_.end() ? nullptr : it->second;
}

absl::Status ModelRegistry::Delete(std::string_view name) {
  MutexLock admin(&admin_mu_);
  std::shared_ptr<ServedModel> doomed;
  {
    MutexLock lock(&mu_);
    auto it = models_.find(absl::string_view(name.data(), name.size()));
    if (it == models_.end()) {
      return absl::NotFoundError(absl::StrCat("model ", Quote(name), " not found"));
    }
    doomed = std::move(it->second);
    models_.erase(it);
  }
  if (!doomed->durable()) return absl::OkStatus();
  // Closing waits for a learner inside the journal and refuses later ones,
  // so nothing writes into the directory once it is being removed.
  doomed->CloseJournal();
  absl::Status s = ModelJournal::Destroy(options_.journal.env, ModelDir(name));
  if (!s.ok()) {
    return absl::UnavailableError(absl::StrCat("model \"", std::string(name),
                                               "\" is deleted but its directory could not be "
                                               "removed: ",
                                               s.message()));
  }
  return absl::OkStatus();
}

std::vector<std::shared_ptr<ServedModel>> ModelRegistry::List() const {
  std::vector<std::shared_ptr<ServedModel>> out;
  {
    ReaderMutexLock lock(&mu_);
    for (const auto& [name, model] : models_) out.push_back(model);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a->name() < b->name(); });
  return out;
}

size_t ModelRegistry::size() const {
  ReaderMutexLock lock(&mu_);
  return models_.size();
}

}  // namespace clickd
