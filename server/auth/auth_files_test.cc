#include "server/auth/auth_files.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/match.h"

namespace clickd::auth {
namespace {

class AuthFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = ::testing::TempDir() + "auth_files_XXXXXX";
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    dir_ = dir;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Replaces the file atomically, as a Kubernetes Secret update does.
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    {
      std::ofstream out(path + ".tmp", std::ios::trunc);
      out << text;
    }
    std::filesystem::rename(path + ".tmp", path);
    return path;
  }

  std::string dir_;
};

constexpr char kOld[] = "old-token-0123456789";
constexpr char kNew[] = "new-token-0123456789";

TEST_F(AuthFilesTest, ReloadsChangedTokensAndKeepsTheOldOnesOnError) {
  const std::string path = Write("tokens", std::string("admin ") + kOld + "\n");
  auto files = AuthFiles::Load(path, "");
  ASSERT_TRUE(files.ok()) << files.status();
  std::shared_ptr<const Authorizer> before = (*files)->Current();
  EXPECT_TRUE(before->Identify(std::string("Bearer ") + kOld, {}).authenticated);
  EXPECT_EQ((*files)->ReloadIfChanged().value_or(true), false);

  Write("tokens", std::string("predict ") + kNew + "\n");
  EXPECT_EQ((*files)->ReloadIfChanged().value_or(false), true);
  std::shared_ptr<const Authorizer> after = (*files)->Current();
  EXPECT_FALSE(after->Identify(std::string("Bearer ") + kOld, {}).authenticated);
  EXPECT_EQ(after->Identify(std::string("Bearer ") + kNew, {}).role, Role::kPredict);
  // A snapshot taken before the reload is unchanged.
  EXPECT_TRUE(before->Identify(std::string("Bearer ") + kOld, {}).authenticated);

  Write("tokens", "predict\n");
  auto failed = (*files)->ReloadIfChanged();
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(absl::StrContains(failed.status().message(), "--auth_tokens_file"));
  EXPECT_TRUE(absl::StrContains(failed.status().message(), "line 1: empty token"));
  EXPECT_EQ((*files)->Current()->Identify(std::string("Bearer ") + kNew, {}).role, Role::kPredict);
  // The same broken file is reported once.
  EXPECT_EQ((*files)->ReloadIfChanged().value_or(true), false);
}

TEST_F(AuthFilesTest, LoadRefusesMissingOrBadFiles) {
  auto missing = AuthFiles::Load(dir_ + "/none", "");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::StartsWith(missing.status().message(), "--auth_tokens_file="))
      << missing.status();
  auto bad = AuthFiles::Load("", Write("roles", "root x\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "--auth_cert_roles_file")) << bad.status();
}

}  // namespace
}  // namespace clickd::auth
