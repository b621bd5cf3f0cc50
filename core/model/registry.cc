#include "core/model/registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace clickd {

absl::StatusOr<std::shared_ptr<ServedModel>> ModelRegistry::Create(const ModelConfig& config) {
  // Build outside the lock: creating a model allocates its shards.
  auto model = CreateModel(config);
  if (!model.ok()) return model.status();
  auto served = std::make_shared<ServedModel>(*std::move(model));
  MutexLock lock(&mu_);
  auto [it, inserted] = models_.try_emplace(config.name, served);
  if (!inserted) {
    return absl::AlreadyExistsError(absl::StrCat("model \"", config.name, "\" already exists"));
  }
  return served;
}

std::shared_ptr<ServedModel> ModelRegistry::Get(std::string_view name) const {
  ReaderMutexLock lock(&mu_);
  auto it = models_.find(absl::string_view(name.data(), name.size()));
  return it == models_.end() ? nullptr : it->second;
}

absl::Status ModelRegistry::Delete(std::string_view name) {
  std::shared_ptr<ServedModel> doomed;  // released after the lock
  MutexLock lock(&mu_);
  auto it = models_.find(absl::string_view(name.data(), name.size()));
  if (it == models_.end()) {
    return absl::NotFoundError(absl::StrCat("model \"", std::string(name), "\" not found"));
  }
  doomed = std::move(it->second);
  models_.erase(it);
  return absl::OkStatus();
}

std::vector<std::shared_ptr<ServedModel>> ModelRegistry::List() const {
  std::vector<std::shared_ptr<ServedModel>> out;
  {
    ReaderMutexLock lock(&mu_);
    for (const auto& [name, model] : models_) out.push_back(model);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a->model().config().name < b->model().config().name;
  });
  return out;
}

size_t ModelRegistry::size() const {
  ReaderMutexLock lock(&mu_);
  return models_.size();
}

}  // namespace clickd
