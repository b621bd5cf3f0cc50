#include "server/model_startup.h"

#include <iostream>
#include <string>

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

absl::Status LoadModels(ModelRegistry* registry, const std::vector<ModelConfig>& configs) {
  for (const ModelConfig& config : configs) {
    if (registry->Get(config.name) != nullptr) {
      // The data directory's model, with what it learned, wins over a fresh one.
      std::cout << "clickd: model \"" << config.name
                << "\" restored from --data_dir; its config there is kept" << std::endl;
      continue;
    }
    if (auto created = registry->Create(config); !created.ok()) return created.status();
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
