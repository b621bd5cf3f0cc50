#include "server/auth/authorizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"

namespace clickd::auth {
namespace {

const std::vector<std::string> kMethods = {
    "Predict",     "GetModel",    "ListModels",    "Update",   "UpdateStream",  "UpdateStreamAcked",
    "CreateModel", "DeleteModel", "SnapshotModel", "Feedback", "FeedbackStream"};

Identity WithRole(Role role) {
  Identity identity;
  identity.authenticated = true;
  identity.role = role;
  identity.description = "token of line 1";
  return identity;
}

// The roles table of docs/security.md, method by method.
TEST(Authorize, FollowsTheRolesTable) {
  const std::vector<std::pair<std::string, Role>> table = {
      {"Predict", Role::kPredict},     {"GetModel", Role::kPredict},
      {"ListModels", Role::kPredict},  {"Update", Role::kLearn},
      {"UpdateStream", Role::kLearn},  {"UpdateStreamAcked", Role::kLearn},
      {"CreateModel", Role::kAdmin},   {"DeleteModel", Role::kAdmin},
      {"SnapshotModel", Role::kAdmin}, {"Feedback", Role::kLearn},
      {"FeedbackStream", Role::kLearn}};
  for (const auto& [method, needed] : table) {
    for (Role role : {Role::kPredict, Role::kLearn, Role::kAdmin}) {
      const absl::Status s = Authorize(method, WithRole(role));
      if (role >= needed) {
        EXPECT_TRUE(s.ok()) << method << " " << RoleName(role) << ": " << s;
      } else {
        EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << method << " " << RoleName(role);
        EXPECT_TRUE(absl::StrContains(s.message(), method)) << s;
        EXPECT_TRUE(absl::StrContains(s.message(), absl::StrCat("needs role ", RoleName(needed))))
            << s;
      }
    }
  }
}

TEST(Authorize, RefusesUnauthenticatedUnknownMethodsAndNoRole) {
  EXPECT_EQ(Authorize("Predict", Identity{}).code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(Authorize("Frobnicate", WithRole(Role::kAdmin)).code(),
            absl::StatusCode::kPermissionDenied);
  Identity no_role;
  no_role.authenticated = true;
  no_role.description = "certificate \"x\"";
  const absl::Status s = Authorize("Predict", no_role);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(absl::StrContains(s.message(), "no role")) << s;
}

TEST(CheckServed, SplitsAdminMethods) {
  for (const std::string& method : kMethods) {
    const bool admin = RequiredRole(method) == Role::kAdmin;
    EXPECT_TRUE(CheckServed(method, MethodSet::kAll).ok());
    EXPECT_EQ(CheckServed(method, MethodSet::kNoAdmin).ok(), !admin) << method;
    // GetModel is served on the admin address too: its state_digest needs
    // the admin role (issue 33, N4).
    EXPECT_EQ(CheckServed(method, MethodSet::kAdminOnly).ok(), admin || method == "GetModel")
        << method;
    EXPECT_EQ(CheckServed(method, MethodSet::kNone).code(), absl::StatusCode::kPermissionDenied);
  }
  EXPECT_TRUE(absl::StrContains(CheckServed("CreateModel", MethodSet::kNoAdmin).message(),
                                "served on the admin address"));
}

constexpr char kTokens[] =
    "# clickd tokens\n"
    "predict pppppppppppppppppppp\n"
    "\n"
    "learn   llllllllllllllllllll\r\n"
    "admin\taaaaaaaaaaaaaaaaaaaa\n";

TEST(TokenTable, ParsesAndFinds) {
  auto table = TokenTable::Parse(kTokens);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->size(), 3u);
  Identity learn = table->Find("llllllllllllllllllll");
  EXPECT_TRUE(learn.authenticated);
  EXPECT_EQ(learn.role, Role::kLearn);
  EXPECT_EQ(learn.description, "token of line 4");
  EXPECT_EQ(table->Find("aaaaaaaaaaaaaaaaaaaa").role, Role::kAdmin);
  EXPECT_FALSE(table->Find("aaaaaaaaaaaaaaaaaaab").authenticated);
  EXPECT_FALSE(table->Find("").authenticated);
}

TEST(TokenTable, RefusesBadLinesNamingThem) {
  struct Case {
    std::string text;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"predict pppppppppppppppppppp\npredict\n", "line 2: empty token"},
      {"predict pppppppppppppppppppp\n\nlearn pppppppppppppppppppp\n",
       "line 3: duplicate token (also on line 1)"},
      {"root pppppppppppppppppppp\n", "line 1: unknown role \"root\""},
      {"predict pppp pppppppppppppppp\n", "line 1: expected `ROLE TOKEN`, found 3 fields"},
      {"predict short\n", "line 1: token of 5 characters"},
      {"# nothing\n", "no tokens"},
  };
  for (const Case& c : cases) {
    auto table = TokenTable::Parse(c.text);
    ASSERT_FALSE(table.ok()) << c.text;
    EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(table.status().message(), c.error)) << table.status();
    EXPECT_FALSE(absl::StrContains(table.status().message(), "pppp")) << "echoes the token";
  }
}

TEST(TokenTable, LoadNamesTheFile) {
  auto table = TokenTable::Load("/nonexistent/tokens");
  ASSERT_FALSE(table.ok());
  EXPECT_TRUE(absl::StrContains(table.status().message(), "/nonexistent/tokens"));
}

TEST(CertRoleTable, HighestRoleOfTheNamesWins) {
  auto table = CertRoleTable::Parse("learn trainer\nadmin ops.example.com\n");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->Find({"trainer"}).role, Role::kLearn);
  EXPECT_EQ(table->Find({"trainer", "ops.example.com"}).role, Role::kAdmin);
  Identity stranger = table->Find({"stranger"});
  EXPECT_TRUE(stranger.authenticated);
  EXPECT_FALSE(stranger.role.has_value());
  EXPECT_FALSE(CertRoleTable::Parse("learn a\nadmin a\n").ok());
  EXPECT_FALSE(CertRoleTable::Parse("learn\n").ok());
}

TEST(Authorizer, TokensCertificatesAndOff) {
  auto tokens = TokenTable::Parse(kTokens);
  auto certs = CertRoleTable::Parse("learn trainer\n");
  ASSERT_TRUE(tokens.ok() && certs.ok());
  const Authorizer both(*tokens, *certs);
  EXPECT_EQ(both.Identify("Bearer pppppppppppppppppppp", {}).role, Role::kPredict);
  EXPECT_EQ(both.Identify(std::nullopt, {"trainer"}).role, Role::kLearn);
  // A wrong token is not rescued by a certificate.
  EXPECT_FALSE(both.Identify("Bearer wrong-token-wrong-token", {"trainer"}).authenticated);
  EXPECT_FALSE(both.Identify("Basic pppppppppppppppppppp", {}).authenticated);
  EXPECT_FALSE(both.Identify(std::nullopt, {}).authenticated);

  const Authorizer tokens_only(*tokens, std::nullopt);
  EXPECT_FALSE(tokens_only.Identify(std::nullopt, {"trainer"}).authenticated);

  const Authorizer off;
  EXPECT_FALSE(off.enabled());
  EXPECT_TRUE(Authorize("DeleteModel", off.Identify(std::nullopt, {})).ok());
}

}  // namespace
}  // namespace clickd::auth
