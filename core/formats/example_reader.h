// ExampleReader streams LabeledExamples from a file in one input format,
// reporting malformed lines as "path:line: reason".
//
// Not thread-safe: one reader per thread.
#ifndef CLICKD_CORE_FORMATS_EXAMPLE_READER_H_
#define CLICKD_CORE_FORMATS_EXAMPLE_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/features/example.h"
#include "core/formats/parse.h"

namespace clickd {

class ExampleReader {
 public:
  // Opens `path`; NotFound if it cannot be opened.
  static absl::StatusOr<std::unique_ptr<ExampleReader>> Open(const std::string& path,
                                                             InputFormat format,
                                                             bool skip_bad_lines);
  virtual ~ExampleReader() = default;

  // Reads the next example into *example. Returns false at end of file.
  // Blank lines are ignored. A malformed line returns InvalidArgument
  // "path:line: reason", unless skip_bad_lines, in which case the line is
  // counted, its error kept (the first few), and reading goes on.
  virtual absl::StatusOr<bool> Next(LabeledExample* example) = 0;

  // Next, then hasher.Hash, in one (ParseLineHashed): the next example's
  // features, label and importance into *out. The same lines, errors and
  // counts as Next.
  virtual absl::StatusOr<bool> NextHashed(const FeatureHasher& hasher, HashedLine* out) = 0;

  // 1-based number of the line last returned (or rejected).
  virtual uint64_t line_number() const = 0;
  virtual uint64_t skipped_lines() const = 0;
  // The first kMaxKeptErrors skip reasons, each "path:line: reason".
  virtual const std::vector<std::string>& skipped_errors() const = 0;

  static constexpr size_t kMaxKeptErrors = 10;
};

}  // namespace clickd

#endif  // CLICKD_CORE_FORMATS_EXAMPLE_READER_H_
