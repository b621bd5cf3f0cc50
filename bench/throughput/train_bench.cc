// train_bench: where the time of training goes, stage by stage, in one
// process; docs/archive/performance_training.md ((b)-(e)) shows its
// output. bench/throughput/run.sh runs it; by hand:
//
//   train_bench [--format=vw] [--passes=1] [--repeats=3] [--stages=...] FILE
//
// Each stage is timed --repeats times; one repetition goes --passes times
// over the file (or over the examples held in memory):
//   replay  the whole of clickctl replay --offline: ReplayOffline on a fresh
//           model per pass (read, parse, hash, learn, progressive metrics)
//   read    the file's lines only: fread + memchr, as ExampleReader splits them
//   parse   ExampleReader::Next: read + parse into LabeledExample
//   hash    FeatureHasher::Hash of parsed examples (parsed untimed, in batches
//           of kBatch), and "keys", the XXH3 calls alone, to split Hash's cost
//   learn   per optimizer, Model::Learn over examples pre-parsed and pre-hashed
//           into memory, a fresh model per repetition; then Model::Margin over
//           the same examples on the trained model; then the store's memory
//   whatif  the what-if learners of whatif_learner.h (FTRL), checked to give
//           the Model's margins bit for bit; for VW input also fused_vw.h's
//           one-pass parse+hash, checked to give Hash's keys
//   mt      Model::Learn on one FTRL model from 1 and from --threads threads
// The timed loops do nothing else: no label checks, metrics or progress.
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/throughput/bench_util.h"
#include "bench/throughput/fused_vw.h"
#include "bench/throughput/hashed_set.h"
#include "bench/throughput/whatif_learner.h"
#include "core/formats/example_reader.h"
#include "core/model/model.h"
#include "core/replay/replay.h"
#include "core/store/flat_table.h"

ABSL_FLAG(std::string, format, "vw", "input format: libsvm | vw | criteo");
ABSL_FLAG(int, passes, 1, "passes over the file (or the in-memory examples) per repetition");
ABSL_FLAG(int, repeats, 3, "repetitions of each stage (median, min and max are reported)");
ABSL_FLAG(std::string, optimizers, "ftrl,adagrad,adagrad_da,pc_ogd,global_ogd,sgd",
          "learn: optimizers to time");
ABSL_FLAG(std::string, stages, "replay,read,parse,hash,learn,whatif",
          "stages to run, any of replay,read,parse,hash,learn,whatif,mt");
ABSL_FLAG(std::string, replay_optimizers, "ftrl", "replay: optimizers to time");
ABSL_FLAG(int, threads, 2, "mt: learner threads compared with one");
ABSL_FLAG(int, shards, 16, "store shards of every model (clickctl's default is 16)");

namespace clickd::bench {
namespace {

// Examples parsed per timed hashing batch: small enough (~0.6 MB of parsed
// examples) to stay in L2, as an example just parsed would be.
constexpr size_t kBatch = 256;

[[noreturn]] void Die(const absl::Status& status) {
  std::fprintf(stderr, "train_bench: %s\n", std::string(status.message()).c_str());
  std::exit(1);
}

uint64_t RawFeatures(const LabeledExample& example) {
  uint64_t n = 0;
  for (const Namespace& ns : example.example.namespaces) n += ns.features.size();
  return n;
}

StageResult MeasureReplay(const ModelConfig& config, const std::string& path, InputFormat format,
                          int passes, int repeats) {
  StageResult result("replay: ReplayOffline, " +
                     std::string(OptimizerTypeName(config.optimizer.type)));
  ReplayOptions options;
  options.format = format;
  for (int rep = 0; rep < repeats; ++rep) {
    result.examples = result.features = 0;
    Stopwatch clock;
    for (int pass = 0; pass < passes; ++pass) {
      absl::StatusOr<std::unique_ptr<Model>> model = CreateModel(config);
      if (!model.ok()) Die(model.status());
      absl::StatusOr<ReplayResult> replay = ReplayOffline(**model, path, std::nullopt, options);
      if (!replay.ok()) Die(replay.status());
      result.examples += replay->progressive.examples;
      result.features += replay->features;
    }
    result.Add(clock);
  }
  return result;
}

StageResult MeasureRead(const std::string& path, int passes, int repeats) {
  StageResult result("read lines (fread + memchr)");
  std::vector<char> buffer(256 * 1024);
  for (int rep = 0; rep < repeats; ++rep) {
    Stopwatch clock;
    uint64_t lines = 0;
    for (int pass = 0; pass < passes; ++pass) {
      std::FILE* file = std::fopen(path.c_str(), "rb");
      if (file == nullptr) Die(absl::NotFoundError("cannot open " + path));
      std::setvbuf(file, nullptr, _IONBF, 0);
      for (size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), file)) > 0;) {
        const char* end = buffer.data() + n;
        for (const char* p = buffer.data();
             (p = static_cast<const char*>(std::memchr(p, '\n', end - p))) != nullptr; ++p) {
          ++lines;
        }
      }
      std::fclose(file);
    }
    result.Add(clock);
    result.examples = lines;
  }
  return result;
}

// Reads up to batch->size() examples; returns how many.
size_t ReadBatch(ExampleReader& reader, std::vector<LabeledExample>* batch) {
  size_t n = 0;
  while (n < batch->size()) {
    absl::StatusOr<bool> more = reader.Next(&(*batch)[n]);
    if (!more.ok()) Die(more.status());
    if (!*more) break;
    ++n;
  }
  return n;
}

OptimizerType OptimizerOrDie(absl::string_view name) {
  absl::StatusOr<OptimizerType> type = ParseOptimizerType(std::string(name));
  if (!type.ok()) Die(type.status());
  return *type;
}

std::unique_ptr<ExampleReader> OpenOrDie(const std::string& path, InputFormat format) {
  auto reader = ExampleReader::Open(path, format, /*skip_bad_lines=*/false);
  if (!reader.ok()) Die(reader.status());
  return *std::move(reader);
}

StageResult MeasureParse(const std::string& path, InputFormat format, int passes, int repeats) {
  StageResult result("parse (read + ExampleReader::Next)");
  LabeledExample example;
  for (int rep = 0; rep < repeats; ++rep) {
    Stopwatch clock;
    result.examples = result.features = 0;
    for (int pass = 0; pass < passes; ++pass) {
      std::unique_ptr<ExampleReader> reader = OpenOrDie(path, format);
      for (;;) {
        absl::StatusOr<bool> more = reader->Next(&example);
        if (!more.ok()) Die(more.status());
        if (!*more) break;
        ++result.examples;
        result.features += RawFeatures(example);
      }
    }
    result.Add(clock);
  }
  return result;
}

// The XXH3 calls that FeatureHasher::Hash makes for plain features, alone.
uint64_t KeysOnly(const FeatureHasher& hasher, const Example& example) {
  uint64_t sink = 0;
  for (const Namespace& ns : example.namespaces) {
    const uint64_t ns_hash = hasher.NamespaceHash(ns.name);
    for (const Feature& f : ns.features) {
      sink ^=
          f.has_id ? FeatureHasher::IdKey(ns_hash, f.id) : FeatureHasher::NamedKey(ns_hash, f.name);
    }
  }
  return sink;
}

// FeatureHasher::Hash without its merge of repeated keys (a sort before
// 2a1adf2, a small hash table since): the same keys, bias and folding,
// appended in input order. What Hash would cost without the merge (repeated
// keys would then stay unmerged).
void HashUnsorted(const FeatureHasher& hasher, const Example& example,
                  std::vector<HashedFeature>* out) {
  for (const Namespace& ns : example.namespaces) {
    const uint64_t ns_hash = hasher.NamespaceHash(ns.name);
    for (const Feature& f : ns.features) {
      if (f.value == 0.0f) continue;
      const uint64_t key =
          f.has_id ? FeatureHasher::IdKey(ns_hash, f.id) : FeatureHasher::NamedKey(ns_hash, f.name);
      out->push_back({hasher.Fold(key), f.value});
    }
  }
  if (hasher.config().bias) out->push_back({hasher.Fold(hasher.BiasKey()), 1.0f});
}

// Sums the wall and CPU time of many short timed sections.
struct Accumulator {
  void Add(const Stopwatch& clock) {
    wall += clock.Seconds();
    cpu += clock.CpuSeconds();
  }
  double wall = 0, cpu = 0;
};

// Times the hashing of parsed examples, kBatch at a time, three ways (keys
// only, Hash without sorting, Hash), and fills *set with the hashed examples
// of the first pass of the first repetition. Each example is hashed into its
// own cleared vector, as ReplayOffline does (Hash appending to a non-empty
// vector takes a slower path that copies the tail).
std::vector<StageResult> MeasureHash(const std::string& path, InputFormat format,
                                     const FeatureHasher& hasher, int passes, int repeats,
                                     HashedSet* set) {
  StageResult keys("hash: XXH3 keys only");
  StageResult unsorted("what-if hash: Hash without its merge");
  StageResult hash("hash: FeatureHasher::Hash");
  std::vector<LabeledExample> batch(kBatch);
  std::vector<std::vector<HashedFeature>> outs(kBatch);
  uint64_t sink = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    Accumulator keys_time, unsorted_time, hash_time;
    keys.examples = keys.features = hash.examples = hash.features = 0;
    for (int pass = 0; pass < passes; ++pass) {
      std::unique_ptr<ExampleReader> reader = OpenOrDie(path, format);
      for (size_t n; (n = ReadBatch(*reader, &batch)) > 0;) {
        Stopwatch keys_clock;
        for (size_t i = 0; i < n; ++i) sink ^= KeysOnly(hasher, batch[i].example);
        keys_time.Add(keys_clock);
        Stopwatch unsorted_clock;
        for (size_t i = 0; i < n; ++i) {
          outs[i].clear();
          HashUnsorted(hasher, batch[i].example, &outs[i]);
        }
        unsorted_time.Add(unsorted_clock);
        Stopwatch hash_clock;
        for (size_t i = 0; i < n; ++i) {
          outs[i].clear();
          hasher.Hash(batch[i].example, &outs[i]);
        }
        hash_time.Add(hash_clock);
        for (size_t i = 0; i < n; ++i) {
          keys.features += RawFeatures(batch[i]);
          hash.features += outs[i].size();
        }
        keys.examples += n;
        hash.examples += n;
        if (rep > 0 || pass > 0 || set == nullptr) continue;
        for (size_t i = 0; i < n; ++i) set->Add(outs[i], batch[i].label, batch[i].importance);
      }
    }
    keys.Add(keys_time.wall, keys_time.cpu);
    unsorted.Add(unsorted_time.wall, unsorted_time.cpu);
    hash.Add(hash_time.wall, hash_time.cpu);
  }
  if (sink == 42) std::printf(" ");  // keeps the keys loop from being optimised away
  unsorted.examples = hash.examples;
  unsorted.features = hash.features;
  return {keys, unsorted, hash};
}

// Folds hashed features, in order, into one number, to compare two hashers.
uint64_t Checksum(uint64_t sum, absl::Span<const HashedFeature> features) {
  for (const HashedFeature& f : features) {
    uint32_t bits;
    std::memcpy(&bits, &f.value, sizeof(bits));
    sum = (sum ^ f.key) * 0x100000001B3ull ^ bits;
  }
  return sum;
}

// Times fused_vw.h's one-pass parse+hash over the file held in memory (so
// without the read stage's cost), after checking its output against *set.
StageResult MeasureFusedVw(const std::string& path, const FeatureHasher& hasher,
                           const HashedSet& set, int passes, int repeats, std::string* note) {
  StageResult result("what-if parse+hash fused, no Example (vw)");
  std::string text;
  {
    std::ifstream file(path, std::ios::binary | std::ios::ate);
    text.resize(static_cast<size_t>(file.tellg()));
    file.seekg(0);
    file.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (!file) Die(absl::DataLossError("cannot read " + path));
  }
  std::vector<HashedFeature> out;
  float label = 0;
  // Calls fn() after each line has been hashed into `out`; false on a bad line.
  auto for_each_line = [&](auto&& fn) {
    for (size_t begin = 0; begin < text.size();) {
      size_t end = text.find('\n', begin);
      if (end == std::string::npos) end = text.size();
      out.clear();
      const std::string_view line(text.data() + begin, end - begin);
      begin = end + 1;
      if (line.empty()) continue;
      if (!ParseAndHashVwLine(hasher, line, &out, &label)) return false;
      fn();
    }
    return true;
  };
  uint64_t fused_sum = 0, examples = 0, features = 0;
  const bool ok = for_each_line([&] {
    fused_sum = Checksum(fused_sum, out);
    ++examples;
    features += out.size();
  });
  uint64_t set_sum = 0;
  for (size_t i = 0; i < set.size(); ++i) set_sum = Checksum(set_sum, set.features(i));
  *note = !ok ? "fused what-if: the file has lines it does not handle; not timed"
          : fused_sum == set_sum && examples == set.size()
              ? "fused what-if keys and values: identical to FeatureHasher::Hash"
              : "fused what-if keys and values: DIFFERENT from FeatureHasher::Hash";
  if (!ok) return result;
  result.examples = examples * passes;
  result.features = features * passes;
  for (int rep = 0; rep < repeats; ++rep) {
    Stopwatch clock;
    for (int pass = 0; pass < passes; ++pass) for_each_line([] {});
    result.Add(clock);
  }
  return result;
}

// Bytes of one FlatTable slot (key and state) for the optimizer's State.
template <typename Optimizer>
size_t SlotBytesOf() {
  return sizeof(typename FlatTable<typename Optimizer::State>::Slot);
}

size_t SlotBytes(OptimizerType type) {
  switch (type) {
    case OptimizerType::kFtrl:
      return SlotBytesOf<FtrlProximal>();
    case OptimizerType::kAdagrad:
      return SlotBytesOf<AdagradCmd>();
    case OptimizerType::kAdagradDa:
      return SlotBytesOf<AdagradDa>();
    case OptimizerType::kPcOgd:
      return SlotBytesOf<PcOgd>();
    case OptimizerType::kGlobalOgd:
      return SlotBytesOf<GlobalOgd>();
    case OptimizerType::kSgd:
      return SlotBytesOf<Sgd>();
  }
  return 0;
}

struct LearnResult {
  OptimizerType type = OptimizerType::kFtrl;
  StageResult learn;
  StageResult margin;
  // Model::Margins over requests of kBatchLists lists (a Predict's context
  // and 100 candidates, each list one example's features).
  StageResult batch;
  ModelStats stats;
  double margin_sum = 0;  // of the margins Learn returned, to compare learners
};

LearnResult MeasureLearn(const ModelConfig& config, const HashedSet& set, int passes, int repeats) {
  const std::string name(OptimizerTypeName(config.optimizer.type));
  LearnResult result;
  result.learn.name = "learn: Model::Learn, " + name;
  result.margin.name = "predict: Model::Margin, trained " + name;
  result.learn.examples = set.size() * passes;
  result.learn.features = set.num_features() * passes;
  result.margin.examples = set.size();
  result.margin.features = set.num_features();
  constexpr size_t kBatchLists = 101;
  const size_t requests = set.size() / kBatchLists;
  result.batch.name = "predict: Model::Margins, 101 lists, trained " + name;
  result.batch.examples = requests * kBatchLists;
  for (size_t i = 0; i < requests * kBatchLists; ++i)
    result.batch.features += set.features(i).size();
  for (int rep = 0; rep < repeats; ++rep) {
    absl::StatusOr<std::unique_ptr<Model>> model = CreateModel(config);
    if (!model.ok()) Die(model.status());
    double margin_sum = 0;
    Stopwatch learn_clock;
    for (int pass = 0; pass < passes; ++pass) {
      for (size_t i = 0; i < set.size(); ++i) {
        margin_sum += (*model)->Learn(set.features(i), set.label(i), set.importance(i));
      }
    }
    result.learn.Add(learn_clock);
    double predicted = 0;
    Stopwatch margin_clock;
    for (size_t i = 0; i < set.size(); ++i) predicted += (*model)->Margin(set.features(i));
    result.margin.Add(margin_clock);
    std::vector<absl::Span<const HashedFeature>> lists(kBatchLists);
    std::vector<double> margins(kBatchLists);
    Stopwatch batch_clock;
    for (size_t r = 0; r < requests; ++r) {
      for (size_t l = 0; l < kBatchLists; ++l) lists[l] = set.features(r * kBatchLists + l);
      (*model)->Margins(lists, absl::MakeSpan(margins));
      predicted += margins[0];
    }
    result.batch.Add(batch_clock);
    if (predicted == 42) std::printf(" ");
    result.stats = (*model)->Stats();
    result.margin_sum = margin_sum;
  }
  return result;
}

template <WhatIf kMode>
StageResult MeasureWhatIf(const std::string& name, const ModelConfig& config, const HashedSet& set,
                          int passes, int repeats, double* margin_sum) {
  StageResult result(name, set.size() * passes, set.num_features() * passes);
  for (int rep = 0; rep < repeats; ++rep) {
    WhatIfLearner<FtrlProximal, kMode> learner(config.optimizer.ftrl, config.loss,
                                               config.num_shards);
    double sum = 0;
    Stopwatch clock;
    for (int pass = 0; pass < passes; ++pass) {
      for (size_t i = 0; i < set.size(); ++i) {
        sum += learner.Learn(set.features(i), set.label(i), set.importance(i));
      }
    }
    result.Add(clock);
    *margin_sum = sum;
  }
  return result;
}

// Learn on one model from `threads` threads, thread k taking examples k,
// k + threads, ...: the interleaving of a server's concurrent requests.
StageResult MeasureThreads(const ModelConfig& config, const HashedSet& set, int passes, int repeats,
                           int threads) {
  StageResult result(absl::StrFormat("learn: %s, %d thread(s), one model",
                                     OptimizerTypeName(config.optimizer.type), threads),
                     set.size() * passes, set.num_features() * passes);
  for (int rep = 0; rep < repeats; ++rep) {
    absl::StatusOr<std::unique_ptr<Model>> model = CreateModel(config);
    if (!model.ok()) Die(model.status());
    Stopwatch clock;
    std::vector<std::thread> workers;
    for (int k = 0; k < threads; ++k) {
      workers.emplace_back([&, k] {
        for (int pass = 0; pass < passes; ++pass) {
          for (size_t i = k; i < set.size(); i += threads) {
            (*model)->Learn(set.features(i), set.label(i), set.importance(i));
          }
        }
      });
    }
    for (std::thread& w : workers) w.join();
    result.Add(clock);
  }
  return result;
}

void PrintMemoryTable(const std::vector<LearnResult>& learned) {
  std::printf("\n| %-10s | %11s | %12s | %11s | %11s | %11s | %11s | %10s |\n", "optimizer",
              "coordinates", "table bytes", "bytes/coord", "key+state B", "slot+ctrl B",
              "load factor", "/ VW 16 B");
  std::printf(
      "|------------|-------------|--------------|-------------|-------------|"
      "-------------|-------------|------------|\n");
  for (const LearnResult& r : learned) {
    const ModelStats& s = r.stats;
    const double slot = static_cast<double>(SlotBytes(r.type)) + 1;  // + absl's control byte
    const double per_coordinate = static_cast<double>(s.bytes) / s.coordinates;
    std::printf("| %-10s | %11llu | %12llu | %11.1f | %11llu | %11.0f | %11.2f | %10.2f |\n",
                std::string(OptimizerTypeName(r.type)).c_str(),
                static_cast<unsigned long long>(s.coordinates),
                static_cast<unsigned long long>(s.bytes), per_coordinate,
                static_cast<unsigned long long>(s.state_bytes_per_coordinate), slot,
                s.coordinates * slot / s.bytes, per_coordinate / 16.0);
  }
}

// What Vowpal Wabbit's FTRL (16 bytes per slot, 2^b slots allocated up front)
// would hold for the same number of distinct features, at a few -b values.
void PrintVwComparison(const LearnResult& ftrl) {
  const double n = static_cast<double>(ftrl.stats.coordinates);
  std::printf(
      "\nVW FTRL for the same %llu distinct features (clickd ftrl: %.1f MiB, no "
      "collisions):\n",
      static_cast<unsigned long long>(ftrl.stats.coordinates), ftrl.stats.bytes / 1048576.0);
  std::printf("| %4s | %9s | %18s | %28s |\n", "-b", "MiB", "bytes per feature",
              "features sharing a slot");
  std::printf("|------|-----------|--------------------|------------------------------|\n");
  for (int bits : {18, 20, 22, 24, 26}) {
    const double slots = std::ldexp(1.0, bits);
    // A key shares its slot if any of the other n - 1 keys lands there.
    const double shared = 1.0 - std::exp(-(n - 1) / slots);
    std::printf("| %4d | %9.1f | %18.1f | %27.1f%% |\n", bits, 16 * slots / 1048576.0,
                16 * slots / n, 100 * shared);
  }
}

std::string CpuList() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "?";
  std::string list;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    if (!list.empty()) list += ',';
    list += std::to_string(c);
  }
  return list;
}

// Runs the three what-if learners and notes whether each reproduced the
// Model's margins (when ftrl's learn stage ran, to compare with).
std::vector<StageResult> MeasureWhatIfs(const ModelConfig& config, const HashedSet& set,
                                        const std::vector<LearnResult>& learned, int passes,
                                        int repeats, std::vector<std::string>* notes) {
  double sums[3];
  std::vector<StageResult> stages;
  stages.push_back(MeasureWhatIf<WhatIf::kTwoLookups>("what-if ftrl: no locks, 2 lookups", config,
                                                      set, passes, repeats, &sums[0]));
  stages.push_back(MeasureWhatIf<WhatIf::kOneLookup>("what-if ftrl: no locks, 1 lookup", config,
                                                     set, passes, repeats, &sums[1]));
  stages.push_back(MeasureWhatIf<WhatIf::kOneLookupPrefetch>(
      "what-if ftrl: no locks, 1 lookup, prefetch", config, set, passes, repeats, &sums[2]));
  const double* reference = nullptr;
  for (const LearnResult& r : learned) {
    if (r.type == OptimizerType::kFtrl) reference = &r.margin_sum;
  }
  if (reference == nullptr) {
    notes->push_back("what-if margins not checked: ftrl's learn stage did not run");
    return stages;
  }
  for (double sum : sums) {
    notes->push_back(absl::StrFormat("what-if margin sum %.17g vs Model %.17g: %s", sum, *reference,
                                     sum == *reference ? "identical" : "DIFFERENT"));
  }
  return stages;
}

void PrintReport(const std::vector<StageResult>& table, const std::vector<LearnResult>& learned,
                 const std::vector<std::string>& notes, const HashedSet& set) {
  PrintStageTable(table);
  if (!learned.empty()) PrintMemoryTable(learned);
  for (const LearnResult& r : learned) {
    if (r.type == OptimizerType::kFtrl) PrintVwComparison(r);
  }
  std::printf("\n");
  for (const std::string& note : notes) std::printf("%s\n", note.c_str());
  std::printf(
      "in-memory examples: %zu (%llu hashed features, %.0f MiB); peak RSS %.0f MiB; "
      "at the end: %s\n",
      set.size(), static_cast<unsigned long long>(set.num_features()),
      (set.num_features() * sizeof(HashedFeature) + set.size() * 16) / 1048576.0,
      PeakRssBytes() / 1048576.0, MachineLoad().c_str());
}

}  // namespace

int Main(const std::string& path) {
  const int passes = absl::GetFlag(FLAGS_passes);
  const int repeats = absl::GetFlag(FLAGS_repeats);
  absl::StatusOr<InputFormat> format = ParseInputFormat(absl::GetFlag(FLAGS_format));
  if (!format.ok()) Die(format.status());
  const std::vector<std::string> stages = absl::StrSplit(absl::GetFlag(FLAGS_stages), ',');
  auto want = [&](const char* stage) {
    return std::find(stages.begin(), stages.end(), stage) != stages.end();
  };
  std::printf(
      "train_bench %s: format %s, %d pass(es) per repetition, %d repetitions, "
      "%d shards, CPUs %s, %s\n\n",
      path.c_str(), std::string(InputFormatName(*format)).c_str(), passes, repeats,
      absl::GetFlag(FLAGS_shards), CpuList().c_str(), MachineLoad().c_str());
  std::fflush(stdout);

  ModelConfig defaults;  // clickctl's defaults: 64-bit keys, bias, 16 shards
  defaults.num_shards = absl::GetFlag(FLAGS_shards);
  std::vector<StageResult> table;
  if (want("replay")) {
    for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_replay_optimizers), ',')) {
      ModelConfig config = defaults;
      config.optimizer.type = OptimizerOrDie(name);
      table.push_back(MeasureReplay(config, path, *format, passes, repeats));
    }
  }
  if (want("read")) table.push_back(MeasureRead(path, passes, repeats));
  if (want("parse")) table.push_back(MeasureParse(path, *format, passes, repeats));
  HashedSet set;
  const FeatureHasher hasher(defaults.hashing);
  const bool timed_hash = want("hash");
  for (StageResult& s : MeasureHash(path, *format, hasher, timed_hash ? passes : 1,
                                    timed_hash ? repeats : 1, &set)) {
    if (timed_hash) table.push_back(std::move(s));
  }

  std::vector<LearnResult> learned;
  if (want("learn")) {
    for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_optimizers), ',')) {
      ModelConfig config = defaults;
      config.optimizer.type = OptimizerOrDie(name);
      learned.push_back(MeasureLearn(config, set, passes, repeats));
      learned.back().type = config.optimizer.type;
      table.push_back(learned.back().learn);
      table.push_back(learned.back().margin);
      table.push_back(learned.back().batch);
    }
  }
  std::vector<std::string> notes;
  if (want("whatif")) {
    for (StageResult& s : MeasureWhatIfs(defaults, set, learned, passes, repeats, &notes)) {
      table.push_back(std::move(s));
    }
  }
  if (want("whatif") && *format == InputFormat::kVw) {
    notes.emplace_back();
    table.push_back(MeasureFusedVw(path, hasher, set, passes, repeats, &notes.back()));
  }
  if (want("mt")) {
    table.push_back(MeasureThreads(defaults, set, passes, repeats, 1));
    table.push_back(MeasureThreads(defaults, set, passes, repeats, absl::GetFlag(FLAGS_threads)));
  }

  PrintReport(table, learned, notes, set);
  return 0;
}

}  // namespace clickd::bench

int main(int argc, char** argv) {
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::fprintf(stderr, "usage: train_bench [flags] FILE\n");
    return 2;
  }
  return clickd::bench::Main(args[1]);
}
