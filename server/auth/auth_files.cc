#include "server/auth/auth_files.h"

#include <openssl/sha.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace clickd::auth {
namespace {

// The file's stamp; an empty path has the default stamp.
absl::StatusOr<AuthFiles::Stamp> StampOf(const char* flag, const std::string& path) {
  AuthFiles::Stamp stamp;
  if (path.empty()) return stamp;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(flag, "=", path, ": ", std::strerror(errno)));
  }
  stamp.mtime = st.st_mtim;
  stamp.size = st.st_size;
  stamp.inode = st.st_ino;
  // The content too: a same-size rewrite with the mtime restored (cp -p,
  // tar) keeps the other three (issue 33, N14).
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(absl::StrCat(flag, "=", path, ": ", std::strerror(errno)));
  }
  const std::string content((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());
  SHA256(reinterpret_cast<const unsigned char*>(content.data()), content.size(),
         stamp.content.data());
  return stamp;
}

absl::Status Named(const char* flag, const absl::Status& status) {
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", status.message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<AuthFiles>> AuthFiles::Load(std::string tokens_path,
                                                           std::string cert_roles_path) {
  std::unique_ptr<AuthFiles> files(
      new AuthFiles(std::move(tokens_path), std::move(cert_roles_path)));
  absl::StatusOr<bool> loaded = files->ReloadIfChanged();
  if (!loaded.ok()) return loaded.status();
  return files;
}

std::shared_ptr<const Authorizer> AuthFiles::Current() const {
  ReaderMutexLock lock(&mu_);
  return current_;
}

absl::StatusOr<std::shared_ptr<const Authorizer>> AuthFiles::Read() const {
  std::optional<TokenTable> tokens;
  if (!tokens_path_.empty()) {
    auto table = TokenTable::Load(tokens_path_);
    if (!table.ok()) return Named("--auth_tokens_file", table.status());
    tokens = *std::move(table);
  }
  std::optional<CertRoleTable> cert_roles;
  if (!cert_roles_path_.empty()) {
    auto table = CertRoleTable::Load(cert_roles_path_);
    if (!table.ok()) return Named("--auth_cert_roles_file", table.status());
    cert_roles = *std::move(table);
  }
  return std::make_shared<const Authorizer>(std::move(tokens), std::move(cert_roles));
}

absl::StatusOr<bool> AuthFiles::ReloadIfChanged() {
  auto tokens_stamp = StampOf("--auth_tokens_file", tokens_path_);
  if (!tokens_stamp.ok()) return tokens_stamp.status();
  auto cert_roles_stamp = StampOf("--auth_cert_roles_file", cert_roles_path_);
  if (!cert_roles_stamp.ok()) return cert_roles_stamp.status();
  {
    ReaderMutexLock lock(&mu_);
    if (current_ != nullptr && *tokens_stamp == tokens_stamp_ &&
        *cert_roles_stamp == cert_roles_stamp_) {
      return false;
    }
  }
  // Stamped before reading: a change during the read is seen next time.
  absl::StatusOr<std::shared_ptr<const Authorizer>> read = Read();
  MutexLock lock(&mu_);
  if (!read.ok() && current_ == nullptr) return read.status();  // the first load
  // Stamped on failure too: a broken file is reported once, not at every check.
  tokens_stamp_ = *tokens_stamp;
  cert_roles_stamp_ = *cert_roles_stamp;
  if (!read.ok()) return read.status();
  current_ = *std::move(read);
  return true;
}

AuthFilesReloader::AuthFilesReloader(AuthFiles* files, std::chrono::milliseconds interval)
    : files_(files), interval_(interval), thread_([this] { Run(); }) {}

AuthFilesReloader::~AuthFilesReloader() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  stop_cv_.SignalAll();
  thread_.join();
}

void AuthFilesReloader::Run() {
  while (true) {
    {
      MutexLock lock(&mu_);
      if (!stop_) stop_cv_.WaitFor(&mu_, interval_);
      if (stop_) return;
    }
    absl::StatusOr<bool> reloaded = files_->ReloadIfChanged();
    if (!reloaded.ok()) {
      std::cerr << "clickd: auth files not reloaded, the previous ones stay in force: "
                << reloaded.status().message() << std::endl;
    } else if (*reloaded) {
      std::cout << "clickd: auth files reloaded" << std::endl;
    }
  }
}

}  // namespace clickd::auth
