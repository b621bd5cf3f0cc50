// ImpressionExpirer: the clock of the impression-to-click loop. Once per
// period it asks every model with a loop to expire the impressions whose
// TTL has passed (ModelWriter::ExpireImpressions: a tick record, logged only
// when one is due, in the model's update log or the replicated log), so that an unlabelled
// impression is learned (or dropped) at its TTL even when no Predict or Feedback arrives.
//
// Thread safety: owns one thread; construct and destroy on one thread.
#ifndef CLICKD_SERVER_IMPRESSION_EXPIRER_H_
#define CLICKD_SERVER_IMPRESSION_EXPIRER_H_

#include <chrono>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "core/serving/registry.h"
#include "server/model_writer.h"

namespace clickd {

class ImpressionExpirer {
 public:
  // `registry` and `writer` must outlive the expirer.
  ImpressionExpirer(ModelRegistry* registry, ModelWriter* writer, std::chrono::milliseconds period);
  ~ImpressionExpirer();
  ImpressionExpirer(const ImpressionExpirer&) = delete;
  ImpressionExpirer& operator=(const ImpressionExpirer&) = delete;

 private:
  void Run();

  ModelRegistry* const registry_;
  ModelWriter* const writer_;
  const std::chrono::milliseconds period_;
  Mutex mu_;
  CondVar wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace clickd

#endif  // CLICKD_SERVER_IMPRESSION_EXPIRER_H_
