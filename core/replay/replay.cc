#include "core/replay/replay.h"

#include <chrono>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "core/formats/example_reader.h"
#include "core/replay/read_ahead.h"

namespace clickd {
namespace {

class Stopwatch {
 public:
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

void NormalizeToUnitLength(std::vector<HashedFeature>* features) {
  double norm_sq = 0;
  for (const HashedFeature& f : *features) norm_sq += static_cast<double>(f.value) * f.value;
  if (norm_sq <= 0) return;
  const double inv = 1.0 / std::sqrt(norm_sq);
  for (HashedFeature& f : *features) f.value = static_cast<float>(f.value * inv);
}

// Reads every usable example of a file (the first `limit` if not 0),
// hashing each one, and hands it to `use`, which returns false to stop the
// read early. Lines that fail to parse, or whose label the loss rejects,
// stop the read or (with skip_bad_lines) are counted in *result.
template <typename Use>
absl::Status ForEachExample(const Model& model, const std::string& path,
                            const ReplayOptions& options, uint64_t limit, ReplayResult* result,
                            Use&& use) {
  auto reader = ExampleReader::Open(path, options.format, options.skip_bad_lines);
  if (!reader.ok()) return reader.status();
  HashedLine line;
  HashedExample hashed;
  for (uint64_t used = 0; limit == 0 || used < limit;) {
    absl::StatusOr<bool> more = (*reader)->NextHashed(model.hasher(), &line);
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (absl::Status s = CheckLabel(model.config().loss, line.label, "label"); !s.ok()) {
      std::string message = absl::StrCat(path, ":", (*reader)->line_number(), ": ", s.message());
      if (!options.skip_bad_lines) return absl::InvalidArgumentError(message);
      if (result->skipped_errors.size() < ExampleReader::kMaxKeptErrors) {
        result->skipped_errors.push_back(std::move(message));
      }
      ++result->skipped_lines;
      continue;
    }
    hashed.features.swap(line.hashed.features);
    if (options.normalize) NormalizeToUnitLength(&hashed.features);
    hashed.label = line.label;
    hashed.importance = line.importance;
    if (!use(hashed)) break;
    ++used;
  }
  result->skipped_lines += (*reader)->skipped_lines();
  for (const std::string& e : (*reader)->skipped_errors()) {
    if (result->skipped_errors.size() < ExampleReader::kMaxKeptErrors) {
      result->skipped_errors.push_back(e);
    }
  }
  return absl::OkStatus();
}

// Fisher-Yates with raw 64-bit draws: std::shuffle and the standard
// distributions are implementation-defined, this is not.
void Shuffle(std::vector<HashedExample>* examples, std::mt19937_64* rng) {
  for (size_t i = examples->size(); i > 1; --i) {
    std::swap((*examples)[i - 1], (*examples)[(*rng)() % i]);
  }
}

// Learns one example and scores its pre-update margin.
class Trainer {
 public:
  Trainer(Model& model, const ReplayOptions& options, ReplayResult* result)
      : model_(model), options_(options), result_(result), metrics_(model.config().loss) {}

  void Learn(const HashedExample& e) { Record(e, model_.Learn(e.features, e.label, e.importance)); }

  // Learns a batch with Model::LearnExclusive (the replay is the model's
  // only user): the same steps as Learn one by one, with every shard
  // locked once per batch instead of once per step.
  void LearnBatch(absl::Span<const HashedExample> batch) {
    items_.resize(batch.size());
    margins_.resize(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      items_[i] = {batch[i].features, batch[i].label, batch[i].importance};
    }
    model_.LearnExclusive(items_, absl::MakeSpan(margins_));
    for (size_t i = 0; i < batch.size(); ++i) Record(batch[i], margins_[i]);
  }

  const ProgressiveMetrics& metrics() const { return metrics_; }
  double seconds() const { return clock_.Seconds(); }

 private:
  // Scores one learned example's pre-update margin.
  void Record(const HashedExample& e, double margin) {
    metrics_.Add(margin, e.label, e.importance);
    loss_sum_ += Loss(model_.config().loss, margin, e.label);
    result_->features += e.features.size();
    ++examples_;
    if (options_.progress_every > 0 && examples_ % options_.progress_every == 0 &&
        options_.on_progress) {
      options_.on_progress({examples_, clock_.Seconds(), loss_sum_ / examples_});
    }
  }

  Model& model_;
  const ReplayOptions& options_;
  ReplayResult* result_;
  ProgressiveMetrics metrics_;
  Stopwatch clock_;
  uint64_t examples_ = 0;
  double loss_sum_ = 0;
  std::vector<Model::LearnItem> items_;
  std::vector<double> margins_;
};

// ForEachExample, with the reading, parsing and hashing on a thread of its
// own if options.read_ahead (the order of the examples is the same): `use`
// gets each example, or with reading ahead `use_batch` each batch.
template <typename Use, typename UseBatch>
absl::Status ForEachExampleReadAhead(const Model& model, const std::string& path,
                                     const ReplayOptions& options, uint64_t limit,
                                     ReplayResult* result, Use&& use, UseBatch&& use_batch) {
  if (!options.read_ahead) {
    return ForEachExample(model, path, options, limit, result, [&](const HashedExample& e) {
      use(e);
      return true;
    });
  }
  // The reader counts skipped lines into its own result, merged at the end,
  // so that the two threads never write the same ReplayResult field.
  ReplayResult read_result;
  ReadAhead reader([&](ReadAhead::Emit emit) {
    return ForEachExample(model, path, options, limit, &read_result, emit);
  });
  for (auto batch = reader.NextBatch(); !batch.empty(); batch = reader.NextBatch()) {
    use_batch(batch);
  }
  result->skipped_lines += read_result.skipped_lines;
  for (std::string& e : read_result.skipped_errors) {
    if (result->skipped_errors.size() < ExampleReader::kMaxKeptErrors) {
      result->skipped_errors.push_back(std::move(e));
    }
  }
  return reader.status();
}

absl::Status Train(Model& model, const std::string& path, const ReplayOptions& options,
                   ReplayResult* result) {
  Trainer trainer(model, options, result);
  const bool in_memory = options.passes > 1 || options.shuffle_seed.has_value();
  if (!in_memory) {
    absl::Status s = ForEachExampleReadAhead(
        model, path, options, options.max_examples, result,
        [&](const HashedExample& e) { trainer.Learn(e); },
        [&](absl::Span<const HashedExample> batch) { trainer.LearnBatch(batch); });
    if (!s.ok()) return s;
  } else {
    std::vector<HashedExample> examples;
    absl::Status s = ForEachExample(model, path, options, options.max_examples, result,
                                    [&](const HashedExample& e) {
                                      examples.push_back(e);
                                      return true;
                                    });
    if (!s.ok()) return s;
    std::mt19937_64 rng(options.shuffle_seed.value_or(0));
    for (int pass = 0; pass < options.passes; ++pass) {
      if (options.shuffle_seed.has_value()) Shuffle(&examples, &rng);
      constexpr size_t kBatch = 256;
      for (size_t at = 0; at < examples.size(); at += kBatch) {
        trainer.LearnBatch(absl::MakeConstSpan(examples).subspan(at, kBatch));
      }
    }
  }
  result->train_seconds = trainer.seconds();
  result->progressive = trainer.metrics().Summary();
  if (options.bootstrap_resamples > 0) {
    result->progressive_ci = Bootstrap(model.config().loss, trainer.metrics().scored(),
                                       options.bootstrap_resamples, options.bootstrap_seed);
  }
  return absl::OkStatus();
}

absl::Status Test(const Model& model, const std::string& path, const ReplayOptions& options,
                  ReplayResult* result) {
  Stopwatch clock;
  ProgressiveMetrics metrics(model.config().loss);
  auto score = [&](const HashedExample& e) {
    metrics.Add(model.Margin(e.features), e.label, e.importance);
  };
  absl::Status s = ForEachExampleReadAhead(model, path, options, 0, result, score,
                                           [&](absl::Span<const HashedExample> batch) {
                                             for (const HashedExample& e : batch) score(e);
                                           });
  if (!s.ok()) return s;
  result->test = metrics.Summary();
  if (options.bootstrap_resamples > 0) {
    result->test_ci = Bootstrap(model.config().loss, metrics.scored(), options.bootstrap_resamples,
                                options.bootstrap_seed);
  }
  result->test_seconds = clock.Seconds();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReplayResult> ReplayOffline(Model& model, const std::string& train_path,
                                           const std::optional<std::string>& test_path,
                                           const ReplayOptions& options) {
  if (options.passes < 1) {
    return absl::InvalidArgumentError(absl::StrCat("passes is ", options.passes, "; must be >= 1"));
  }
  ReplayResult result;
  if (absl::Status s = Train(model, train_path, options, &result); !s.ok()) return s;
  if (test_path.has_value()) {
    if (absl::Status s = Test(model, *test_path, options, &result); !s.ok()) return s;
  }
  return result;
}

}  // namespace clickd
