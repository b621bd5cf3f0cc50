// The POSIX Env. Errors carry the path and strerror; ENOSPC and EDQUOT
// become ResourceExhausted so that callers can tell a full disk apart.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/persist/env.h"

namespace clickd {
namespace {

absl::Status IoError(const std::string& what, const std::string& path, int err) {
  const std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(err));
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(message);
  if (err == ENOENT) return absl::NotFoundError(message);
  return absl::InternalError(message);
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status Append(std::string_view data) override {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return IoError("write", path_, errno);
      }
      data.remove_prefix(static_cast<size_t>(n));
      unflushed_ += static_cast<uint64_t>(n);
    }
    if (unflushed_ >= kWritebackBytes) StartWriteback();
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    if (::fdatasync(fd_) != 0) return IoError("fdatasync", path_, errno);
    return absl::OkStatus();
  }

  absl::Status Close() override {
    const int fd = fd_;
    fd_ = -1;
    if (fd >= 0 && ::close(fd) != 0) return IoError("close", path_, errno);
    return absl::OkStatus();
  }

 private:
  // A large file (a snapshot: 160 MB at 10M coordinates) written in one go
  // would leave all its pages dirty for its final sync; on ext4 that sync's
  // journal commit stalls every other writer of the file system, among them
  // the learners appending to their update logs (60-100 ms measured). So
  // every kWritebackBytes the kernel is asked to start writing what was
  // appended (without waiting for it), and the final sync has little left.
  // A hint: an error here is ignored, as the final Sync reports real ones.
  static constexpr uint64_t kWritebackBytes = uint64_t{8} << 20;
  // (Offset 0, length 0: the whole file; pages already written are skipped.)
  void StartWriteback() {
    ::sync_file_range(fd_, 0, 0, SYNC_FILE_RANGE_WRITE);
    unflushed_ = 0;
  }

  const std::string path_;
  int fd_;
  uint64_t unflushed_ = 0;  // bytes appended since the last StartWriteback
};

class PosixSequentialFile final : public SequentialFile {
 public:
  PosixSequentialFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixSequentialFile() override { ::close(fd_); }

  absl::Status Read(size_t n, std::string* out) override {
    out->resize(n);
    size_t got = 0;
    while (got < n) {
      const ssize_t r = ::read(fd_, out->data() + got, n - got);
      if (r < 0) {
        if (errno == EINTR) continue;
        return IoError("read", path_, errno);
      }
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    out->resize(got);
    return absl::OkStatus();
  }

 private:
  const std::string path_;
  const int fd_;
};

class PosixEnv final : public Env {
 public:
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                                bool append) override {
    const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
    const int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return IoError("open", path, errno);
    return std::make_unique<PosixWritableFile>(path, fd);
  }

  absl::StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(
      const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return IoError("open", path, errno);
    return std::make_unique<PosixSequentialFile>(path, fd);
  }

  absl::StatusOr<uint64_t> FileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return IoError("stat", path, errno);
    return static_cast<uint64_t>(st.st_size);
  }

  bool FileExists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  absl::Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return IoError("rename", from + " to", errno);
    return absl::OkStatus();
  }

  absl::Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return IoError("unlink", path, errno);
    return absl::OkStatus();
  }

  absl::StatusOr<double> FileModifiedSeconds(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return IoError("stat", path, errno);
    return static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec * 1e-9;
  }

  absl::Status TruncateFile(const std::string& path, uint64_t size) override {
    if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) {
      return IoError("truncate", path, errno);
    }
    return absl::OkStatus();
  }

  absl::Status CreateDirs(const std::string& dir) override {
    for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
      const std::string prefix = dir.substr(0, slash);
      if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
        return IoError("mkdir", prefix, errno);
      }
      if (slash == std::string::npos) break;
    }
    return absl::OkStatus();
  }

  absl::Status RemoveDir(const std::string& dir) override {
    if (::rmdir(dir.c_str()) != 0) return IoError("rmdir", dir, errno);
    return absl::OkStatus();
  }

  absl::Status SyncDir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return IoError("open", dir, errno);
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return IoError("fsync", dir, err);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return IoError("opendir", dir, errno);
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
    return names;
  }

  uint64_t NowMicros() override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

Env* Env::Default() {
  static Env* const env = new PosixEnv();
  return env;
}

absl::StatusOr<std::string> ReadWholeFile(Env* env, const std::string& path) {
  auto file = env->NewSequentialFile(path);
  if (!file.ok()) return file.status();
  std::string all, chunk;
  for (;;) {
    if (absl::Status s = (*file)->Read(1 << 20, &chunk); !s.ok()) return s;
    if (chunk.empty()) return all;
    all += chunk;
  }
}

absl::Status WriteFileAtomically(Env* env, const std::string& path,
                                 const std::function<absl::Status(WritableFile*)>& write) {
  const std::string tmp = path + ".tmp";
  auto publish = [&]() -> absl::Status {
    auto file = env->NewWritableFile(tmp, /*append=*/false);
    if (!file.ok()) return file.status();
    if (absl::Status s = write(file->get()); !s.ok()) return s;
    if (absl::Status s = (*file)->Sync(); !s.ok()) return s;
    if (absl::Status s = (*file)->Close(); !s.ok()) return s;
    if (absl::Status s = env->RenameFile(tmp, path); !s.ok()) return s;
    const size_t slash = path.rfind('/');
    return env->SyncDir(slash == std::string::npos ? "." : path.substr(0, slash));
  };
  absl::Status status = publish();
  if (!status.ok() && env->FileExists(tmp)) (void)env->RemoveFile(tmp);
  return status;
}

}  // namespace clickd
