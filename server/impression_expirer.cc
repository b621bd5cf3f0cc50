#include "server/impression_expirer.h"

#include <iostream>

namespace clickd {

ImpressionExpirer::ImpressionExpirer(ModelRegistry* registry, ModelWriter* writer,
                                     std::chrono::milliseconds period)
    : registry_(registry), writer_(writer), period_(period), thread_([this] { Run(); }) {}

ImpressionExpirer::~ImpressionExpirer() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.SignalAll();
  thread_.join();
}

void ImpressionExpirer::Run() {
  for (;;) {
    {
      MutexLock lock(&mu_);
      if (!stopping_) wake_.WaitFor(&mu_, period_);
      if (stopping_) return;
    }
    for (const std::shared_ptr<ServedModel>& served : registry_->List()) {
      if (served->feedback() == nullptr) continue;
      // A failure (the log refused the tick, NATS is away) is retried next
      // period; the loop's state is unchanged by a refused record.
      if (absl::Status s = writer_->ExpireImpressions(*served); !s.ok()) {
        std::cerr << "clickd: expiring impressions of model \"" << served->name() << "\": " << s
                  << std::endl;
      }
    }
  }
}

}  // namespace clickd
