#include "server/auth/tls.h"

#include <gtest/gtest.h>

#include "absl/strings/match.h"

namespace clickd::auth {
namespace {

TEST(CheckAddress, AcceptsHostPortAndIpv6) {
  for (const char* ok : {"127.0.0.1:50051", "0.0.0.0:0", "localhost:1", "[::]:50051", "[::1]:65535",
                         "clickd-0.clickd:50052"}) {
    EXPECT_TRUE(CheckAddress("--admin_address", ok).ok()) << ok;
  }
}

TEST(CheckAddress, RefusesOthersNamingTheFlag) {
  for (const char* bad : {"", "50051", "127.0.0.1", "127.0.0.1:", ":50051", "127.0.0.1:65536",
                          "127.0.0.1:-1", "127.0.0.1:http", "::1:50051", "[::1:50051"}) {
    const absl::Status s = CheckAddress("--admin_address", bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_TRUE(absl::StartsWith(s.message(), "--admin_address=")) << s;
  }
}

TEST(IsLoopbackAddress, OnlyLoopback) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1:50051"));
  EXPECT_TRUE(IsLoopbackAddress("[::1]:50051"));
  EXPECT_TRUE(IsLoopbackAddress("localhost:50051"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0:50051"));
  EXPECT_FALSE(IsLoopbackAddress("[::]:50051"));
  EXPECT_FALSE(IsLoopbackAddress("10.0.0.1:50051"));
}

TEST(TlsServerCredentialsFromFiles, NamesTheFlagAtFault) {
  TlsFiles files;
  files.cert_file = "/nonexistent/cert.pem";
  files.key_file = "/nonexistent/key.pem";
  auto credentials = TlsServerCredentialsFromFiles(files);
  ASSERT_FALSE(credentials.ok());
  EXPECT_TRUE(absl::StartsWith(credentials.status().message(), "--tls_cert_file="))
      << credentials.status();
  files.key_file.clear();
  EXPECT_FALSE(TlsServerCredentialsFromFiles(files).ok());
}

}  // namespace
}  // namespace clickd::auth
