#include "server/model_startup.h"

#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace clickd {

// Restores the models of --data_dir and says what it found.
absl::Status RecoverModels(ModelRegistry* registry) {
  auto recovered = registry->Recover();
  if (!recovered.ok()) return recovered.status();
  for (const RecoveredModel& m : *recovered) {
    for (const std::string& reason : m.report.rejected_snapshots) {
      std::cout << "clickd: model \"" << m.name << "\": skipped a damaged snapshot: " << reason
                << std::endl;
    }
    if (m.report.log_restarted) {
      std::cout << "clickd: model \"" << m.name << "\": no update log behind snapshot "
                << m.report.snapshot_sequence << " (restored from a backup?); it starts there"
                << std::endl;
    }
    for (const std::string& damage : m.report.covered_log_damage) {
      std::cout << "clickd: model \"" << m.name
                << "\": damaged update log the snapshot covers: " << damage << std::endl;
    }
    if (!m.report.salvaged_log_damage.empty()) {
      std::cout << "clickd: model \"" << m.name
                << "\": recovered a damaged update log: " << m.report.salvaged_log_damage
                << "; dropped records from " << m.report.dropped_from << "; moved aside: "
                << (m.report.moved_aside.empty() ? "nothing"
                                                 : absl::StrJoin(m.report.moved_aside, ", "))
                << std::endl;
    }
    if (!m.report.manifest_kept.empty()) {
      std::cout << "clickd: model \"" << m.name
                << "\": kept the update log's manifest as it was: " << m.report.manifest_kept
                << std::endl;
    }
    if (m.report.torn_tail_bytes > 0) {
      std::cout << "clickd: model \"" << m.name << "\": cut a torn update-log tail of "
                << m.report.torn_tail_bytes << " bytes" << std::endl;
    }
    std::cout << "clickd: restored model \"" << m.name << "\" from "
              << (m.report.snapshot_sequence == 0
                      ? std::string("no snapshot")
                      : absl::StrCat("snapshot ", m.report.snapshot_sequence))
              << " + " << m.report.replayed_records << " update-log records in " << m.report.seconds
              << " s" << std::endl;
  }
  return absl::OkStatus();
}

absl::Status LoadModels(ModelRegistry* registry, const std::vector<ModelConfig>& configs,
                        uint64_t max_models, bool implicit_default) {
  std::vector<const ModelConfig*> missing;
  for (const ModelConfig& config : configs) {
    if (registry->Get(config.name) != nullptr) {
      // The data directory's model, with what it learned, wins over a fresh one.
      std::cout << "clickd: model \"" << config.name
                << "\" restored from --data_dir; its config there is kept" << std::endl;
      continue;
    }
    missing.push_back(&config);
  }
  const size_t restored = registry->size();
  if (restored > max_models) {
    std::cout << "clickd: --data_dir holds " << restored
              << " models, more than --max_models=" << max_models
              << ": every one is served; CreateModel is refused until fewer than " << max_models
              << " remain" << std::endl;
  }
  if (implicit_default && !missing.empty() && missing.back()->name == "default" &&
      restored + missing.size() > max_models) {
    std::cout << "clickd: the default model is left out: with " << restored << " restored and "
              << missing.size() - 1 << " more from --config there is no room for it under "
              << "--max_models=" << max_models << std::endl;
    missing.pop_back();
  }
  if (!missing.empty() && restored + missing.size() > max_models) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--config declares ", missing.size(), " model(s) that --data_dir does not hold",
        restored == 0 ? std::string() : absl::StrCat(", beside ", restored, " restored"),
        ": that makes ", restored + missing.size(), " models; the limit is ", max_models,
        " (--max_models); nothing was created"));
  }
  std::vector<std::string> created;
  for (const ModelConfig* config : missing) {
    auto model = registry->Create(*config);
    if (!model.ok()) {
      // Undo this start's creates: their directories would outlive it.
      for (const std::string& name : created) (void)registry->Delete(name);
      return model.status();
    }
    created.push_back(config->name);
  }
  return absl::OkStatus();
}

void LogSnapshot(const ServedModel& model, const absl::StatusOr<SnapshotReport>& result) {
  if (result.ok()) {
    std::cout << "clickd: snapshot of \"" << model.name() << "\" at sequence " << result->sequence
              << ": " << result->coordinates << " coordinates, " << result->bytes << " bytes in "
              << result->seconds << " s" << std::endl;
  } else {
    std::cerr << "clickd: snapshot of \"" << model.name()
              << "\" failed: " << result.status().message() << std::endl;
  }
}

}  // namespace clickd
