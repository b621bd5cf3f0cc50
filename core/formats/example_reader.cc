#include "core/formats/example_reader.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace clickd {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

bool IsBlank(std::string_view line) {
  for (char c : line) {
    if (!absl::ascii_isspace(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Splits a file into lines through one large buffer: a read per chunk and a
// memchr per line, with no per-line allocation. A line longer than the
// buffer grows it. Not thread-safe.
class LineSplitter {
 public:
  LineSplitter(FilePtr file, std::string path)
      : file_(std::move(file)), path_(std::move(path)), buffer_(kChunkBytes) {}

  // Sets *line to the next line without its '\n' (valid until the next
  // call) and returns true, or returns false at end of file. A last line
  // without '\n' is still a line.
  absl::StatusOr<bool> Next(std::string_view* line) {
    while (true) {
      const char* begin = buffer_.data() + begin_;
      const size_t available = end_ - begin_;
      const void* newline = std::memchr(begin + scanned_, '\n', available - scanned_);
      if (newline != nullptr) {
        const size_t length = static_cast<const char*>(newline) - begin;
        *line = std::string_view(begin, length);
        begin_ += length + 1;
        scanned_ = 0;
        return true;
      }
      scanned_ = available;
      if (eof_) {
        if (available == 0) return false;
        *line = std::string_view(begin, available);
        begin_ = end_;
        scanned_ = 0;
        return true;
      }
      absl::Status status = Refill();
      if (!status.ok()) return status;
    }
  }

 private:
  static constexpr size_t kChunkBytes = 256 * 1024;

  // Moves the unfinished line to the front and reads more after it.
  absl::Status Refill() {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
    if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);
    const size_t read = std::fread(buffer_.data() + end_, 1, buffer_.size() - end_, file_.get());
    if (read == 0) {
      if (std::ferror(file_.get())) return absl::ErrnoToStatus(errno, "cannot read " + path_);
      eof_ = true;
    }
    end_ += read;
    return absl::OkStatus();
  }

  FilePtr file_;
  const std::string path_;  // for read errors
  std::vector<char> buffer_;
  size_t begin_ = 0;  // first byte not yet returned
  size_t end_ = 0;    // one past the last byte read
  // Bytes after begin_ already known to hold no '\n', so that a line that
  // spans several reads is scanned once.
  size_t scanned_ = 0;
  bool eof_ = false;
};

class FileExampleReader final : public ExampleReader {
 public:
  FileExampleReader(std::string path, FilePtr file, InputFormat format, bool skip_bad_lines)
      : path_(std::move(path)),
        lines_(std::move(file), path_),
        format_(format),
        skip_bad_lines_(skip_bad_lines) {}

  absl::StatusOr<bool> Next(LabeledExample* example) override {
    return NextParsed([&](std::string_view line) { return ParseLine(format_, line, example); });
  }

  absl::StatusOr<bool> NextHashed(const FeatureHasher& hasher, HashedLine* out) override {
    return NextParsed(
        [&](std::string_view line) { return ParseLineHashed(format_, line, hasher, out); });
  }

  uint64_t line_number() const override { return line_number_; }
  uint64_t skipped_lines() const override { return skipped_lines_; }
  const std::vector<std::string>& skipped_errors() const override { return skipped_errors_; }

 private:
  // The next line that `parse` accepts, skipping blank lines and (with
  // skip_bad_lines) rejected ones.
  template <typename Parse>
  absl::StatusOr<bool> NextParsed(Parse&& parse) {
    while (true) {
      std::string_view line;
      absl::StatusOr<bool> more = lines_.Next(&line);
      if (!more.ok() || !*more) return more;
      ++line_number_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (IsBlank(line)) continue;
      absl::Status status = parse(line);
      if (status.ok()) return true;
      status = Reject(status);
      if (!status.ok()) return status;
    }
  }

  // Returns the error to report for a malformed line, or OK after counting
  // it when bad lines are skipped.
  absl::Status Reject(const absl::Status& parse_error) {
    if (!skip_bad_lines_) return WithLocation(parse_error);
    ++skipped_lines_;
    if (skipped_errors_.size() < kMaxKeptErrors) {
      skipped_errors_.emplace_back(WithLocation(parse_error).message());
    }
    return absl::OkStatus();
  }

  absl::Status WithLocation(const absl::Status& parse_error) const {
    return absl::Status(parse_error.code(),
                        absl::StrCat(path_, ":", line_number_, ": ", parse_error.message()));
  }

  const std::string path_;
  LineSplitter lines_;
  const InputFormat format_;
  const bool skip_bad_lines_;
  uint64_t line_number_ = 0;
  uint64_t skipped_lines_ = 0;
  std::vector<std::string> skipped_errors_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ExampleReader>> ExampleReader::Open(const std::string& path,
                                                                   InputFormat format,
                                                                   bool skip_bad_lines) {
  FilePtr file(std::fopen(path.c_str(), "rb"));
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  // LineSplitter reads in large chunks itself; a stdio buffer would only add a copy.
  std::setvbuf(file.get(), nullptr, _IONBF, 0);
  return std::make_unique<FileExampleReader>(path, std::move(file), format, skip_bad_lines);
}

}  // namespace clickd
