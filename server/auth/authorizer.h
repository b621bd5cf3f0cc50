// Who may call which method of clickd.v1.Clickd (docs/security.md).
//
// Three roles, each implying the ones before it:
//   predict  Predict, GetModel, ListModels
//   learn    + Update, UpdateStream, UpdateStreamAcked
//   admin    + CreateModel, DeleteModel, SnapshotModel
// A caller's Identity comes from a bearer token (TokenTable, the
// --auth_tokens_file) or from its client certificate under mTLS
// (CertRoleTable, the --auth_cert_roles_file); server/auth/call_auth.h reads
// both off a gRPC call. Everything here is pure and gRPC-free, so that the
// decisions are unit-tested without a server.
//
// Tokens are kept as SHA-256 digests only and compared in constant time
// (CRYPTO_memcmp over every entry): the server holds nothing a memory dump
// could replay, and a lookup's duration does not depend on how much of a
// guess matched.
//
// Thread safety: the tables and Authorizer are immutable once built, so
// safe for concurrent use.
#ifndef CLICKD_SERVER_AUTH_AUTHORIZER_H_
#define CLICKD_SERVER_AUTH_AUTHORIZER_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace clickd::auth {

// Ordered: a role allows everything the roles before it allow.
enum class Role { kPredict = 1, kLearn = 2, kAdmin = 3 };

absl::string_view RoleName(Role role);
std::optional<Role> ParseRole(absl::string_view name);

// The role a method of clickd.v1.Clickd (its bare name, "Predict") needs;
// nullopt for a method this table does not know (it is refused).
std::optional<Role> RequiredRole(absl::string_view method);

// Who is calling, as far as the server could tell.
struct Identity {
  // False: no credentials, or credentials that prove nothing (an unknown
  // token).
  bool authenticated = false;
  // The caller's role; none for an authenticated caller without one (a
  // certificate that the roles file does not list).
  std::optional<Role> role;
  // For messages: "token of line 3", "certificate \"trainer\"". Never the
  // token itself.
  std::string description;
  // Why an unauthenticated caller is one, for its error message.
  std::string problem;
};

// Decides one call: OK, UNAUTHENTICATED for an unauthenticated caller, or
// PERMISSION_DENIED naming the method and the role it needs.
absl::Status Authorize(absl::string_view method, const Identity& identity);

// Which methods a ClickdService serves: with --admin_address, the main
// address serves all but the admin methods and the admin address only
// those; the health address serves none.
enum class MethodSet { kAll, kNoAdmin, kAdminOnly, kNone };

// OK if `methods` includes `method`, else PERMISSION_DENIED saying where
// it is served.
absl::Status CheckServed(absl::string_view method, MethodSet methods);

// The bearer tokens of an --auth_tokens_file: one `ROLE TOKEN` per line,
// blank lines and lines starting with '#' ignored.
class TokenTable {
 public:
  // Tokens shorter than this are refused: a bearer token must not be
  // guessable.
  static constexpr size_t kMinTokenLength = 16;

  // Parses a file's text; errors name the line ("line 3: ...") and never
  // quote a token.
  static absl::StatusOr<TokenTable> Parse(absl::string_view text);
  static absl::StatusOr<TokenTable> Load(const std::string& path);

  // The identity a presented token proves (unauthenticated if unknown).
  Identity Find(absl::string_view token) const;

  size_t size() const { return entries_.size(); }

 private:
  using Digest = std::array<uint8_t, 32>;
  struct Entry {
    Digest digest;
    Role role;
    int line;
  };
  static Digest Sha256(absl::string_view text);

  std::vector<Entry> entries_;
};

// The roles of client certificates, from an --auth_cert_roles_file: one
// `ROLE NAME` per line, NAME being a certificate's subject CN or one of its
// subject alternative names (DNS name, URI, e-mail or IP as OpenSSL prints
// it). Blank lines and '#' comments ignored.
class CertRoleTable {
 public:
  static absl::StatusOr<CertRoleTable> Parse(absl::string_view text);
  static absl::StatusOr<CertRoleTable> Load(const std::string& path);

  // The identity of a verified certificate with these names (CN and SANs):
  // the highest role any of them has, or authenticated without a role.
  Identity Find(const std::vector<std::string>& names) const;

  size_t size() const { return roles_.size(); }

 private:
  absl::flat_hash_map<std::string, Role> roles_;
};

// The authentication a server was configured with. With neither table,
// auth is off and every call is allowed (loopback development).
class Authorizer {
 public:
  Authorizer() = default;
  Authorizer(std::optional<TokenTable> tokens, std::optional<CertRoleTable> cert_roles)
      : tokens_(std::move(tokens)), cert_roles_(std::move(cert_roles)) {}

  bool enabled() const { return tokens_.has_value() || cert_roles_.has_value(); }

  // Identifies a caller from its `authorization` header value (nullopt: no
  // header) and the names of its verified client certificate (empty: none).
  // With tokens configured, a header, when present, decides alone: a wrong
  // token is not rescued by a certificate. Without, the header is ignored.
  Identity Identify(std::optional<absl::string_view> authorization,
                    const std::vector<std::string>& cert_names) const;

 private:
  std::optional<TokenTable> tokens_;
  std::optional<CertRoleTable> cert_roles_;
};

}  // namespace clickd::auth

#endif  // CLICKD_SERVER_AUTH_AUTHORIZER_H_
