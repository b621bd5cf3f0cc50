#include "server/auth/authorizer.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace clickd::auth {
namespace {

struct MethodRole {
  absl::string_view method;
  Role role;
};
constexpr MethodRole kMethodRoles[] = {
    {"Predict", Role::kPredict},
    {"GetModel", Role::kPredict},
    {"ListModels", Role::kPredict},
    {"Update", Role::kLearn},
    {"UpdateStream", Role::kLearn},
    {"UpdateStreamAcked", Role::kLearn},
    {"CreateModel", Role::kAdmin},
    {"DeleteModel", Role::kAdmin},
    {"SnapshotModel", Role::kAdmin},
    {"Feedback", Role::kLearn},
    {"FeedbackStream", Role::kLearn},
    // GetModel with state_digest copies and hashes the whole model (O(model)
    // memory and time, under the model's key): an operator's tool, checked
    // after the request is parsed (docs/security.md).
    {"GetModel(state_digest)", Role::kAdmin},
};

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("error reading ", path));
  return text.str();
}

// One `ROLE VALUE` line of a roles file, or nothing for a blank or comment
// line. `what` names the value in errors ("token").
struct RoleLine {
  Role role;
  std::string value;
};
absl::StatusOr<std::optional<RoleLine>> ParseRoleLine(absl::string_view line, int number,
                                                      absl::string_view what) {
  line = absl::StripAsciiWhitespace(line);
  if (line.empty() || line[0] == '#') return std::nullopt;
  std::vector<absl::string_view> fields =
      absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  const std::optional<Role> role = ParseRole(fields[0]);
  if (!role.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("line ", number, ": unknown role \"", fields[0],
                                                   "\" (predict, learn or admin)"));
  }
  if (fields.size() == 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", number, ": empty ", what, " after role ", fields[0]));
  }
  if (fields.size() > 2) {
    return absl::InvalidArgumentError(absl::StrCat("line ", number, ": expected `ROLE ",
                                                   absl::AsciiStrToUpper(what), "`, found ",
                                                   fields.size(), " fields"));
  }
  return RoleLine{*role, std::string(fields[1])};
}

// Calls `add` for each role line of `text`, stopping at the first error.
template <typename Add>
absl::Status ForEachRoleLine(absl::string_view text, absl::string_view what, Add add) {
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    auto parsed = ParseRoleLine(line, number, what);
    if (!parsed.ok()) return parsed.status();
    if (!parsed->has_value()) continue;
    if (absl::Status s = add(**parsed, number); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status WithPath(const absl::Status& status, const std::string& path) {
  return absl::Status(status.code(), absl::StrCat(path, ": ", status.message()));
}

}  // namespace

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kPredict:
      return "predict";
    case Role::kLearn:
      return "learn";
    case Role::kAdmin:
      return "admin";
  }
  return "?";
}

std::optional<Role> ParseRole(absl::string_view name) {
  for (Role role : {Role::kPredict, Role::kLearn, Role::kAdmin}) {
    if (name == RoleName(role)) return role;
  }
  return std::nullopt;
}

std::optional<Role> RequiredRole(absl::string_view method) {
  for (const MethodRole& m : kMethodRoles) {
    if (m.method == method) return m.role;
  }
  return std::nullopt;
}

absl::Status Authorize(absl::string_view method, const Identity& identity) {
  if (!identity.authenticated) {
    return absl::UnauthenticatedError(absl::StrCat(
        method, " needs credentials: ",
        identity.problem.empty() ? "an `authorization: Bearer TOKEN` header or a client "
                                   "certificate that the server knows"
                                 : identity.problem));
  }
  const std::optional<Role> needed = RequiredRole(method);
  if (!needed.has_value()) {
    return absl::PermissionDeniedError(absl::StrCat(method, " is not a known method"));
  }
  if (!identity.role.has_value() || *identity.role < *needed) {
    return absl::PermissionDeniedError(absl::StrCat(
        method, " needs role ", RoleName(*needed), "; the ", identity.description, " has ",
        identity.role.has_value() ? absl::StrCat("role ", RoleName(*identity.role)) : "no role"));
  }
  return absl::OkStatus();
}

absl::Status CheckServed(absl::string_view method, MethodSet methods) {
  const bool admin = RequiredRole(method) == Role::kAdmin;
  if (methods == MethodSet::kNoAdmin && admin) {
    return absl::PermissionDeniedError(
        absl::StrCat(method, " is served on the admin address (--admin_address), not this one"));
  }
  if (methods == MethodSet::kNone) {
    return absl::PermissionDeniedError(absl::StrCat(
        method, " is not served on the health address (--health_address), only grpc.health.v1"));
  }
  // GetModel is served on the admin address too, for its state_digest
  // (admin role), which the main address refuses when there is one.
  if (methods == MethodSet::kAdminOnly && !admin && method != "GetModel") {
    return absl::PermissionDeniedError(absl::StrCat(
        method, " is not served on the admin address; call the main address (--address)"));
  }
  return absl::OkStatus();
}

TokenTable::Digest TokenTable::Sha256(absl::string_view text) {
  Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  return digest;
}

absl::StatusOr<TokenTable> TokenTable::Parse(absl::string_view text) {
  TokenTable table;
  absl::Status s = ForEachRoleLine(text, "token", [&](const RoleLine& line, int number) {
    if (line.value.size() < kMinTokenLength) {
      return absl::InvalidArgumentError(absl::StrCat("line ", number, ": token of ",
                                                     line.value.size(), " characters; at least ",
                                                     kMinTokenLength, " are needed"));
    }
    // A header value gRPC sends is visible ASCII: a token with any other
    // byte (a control character, UTF-8) could never be presented.
    for (size_t i = 0; i < line.value.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(line.value[i]);
      if (c < 0x21 || c > 0x7e) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "line %d: the token's character %d is byte 0x%02x, which no HTTP/2 client can send "
            "in a header; tokens are visible ASCII (0x21-0x7e)",
            number, i + 1, c));
      }
    }
    const Digest digest = Sha256(line.value);
    for (const Entry& e : table.entries_) {
      if (e.digest == digest) {
        return absl::InvalidArgumentError(
            absl::StrCat("line ", number, ": duplicate token (also on line ", e.line, ")"));
      }
    }
    table.entries_.push_back({digest, line.role, number});
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  if (table.entries_.empty()) return absl::InvalidArgumentError("no tokens");
  return table;
}

absl::StatusOr<TokenTable> TokenTable::Load(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  auto table = Parse(*text);
  if (!table.ok()) return WithPath(table.status(), path);
  return table;
}

Identity TokenTable::Find(absl::string_view token) const {
  const Digest digest = Sha256(token);
  const Entry* found = nullptr;
  // Every entry is compared, in constant time, whatever matches.
  for (const Entry& e : entries_) {
    if (CRYPTO_memcmp(e.digest.data(), digest.data(), digest.size()) == 0) found = &e;
  }
  Identity identity;
  if (found == nullptr) {
    identity.problem = "the bearer token is not valid";
    return identity;
  }
  identity.authenticated = true;
  identity.role = found->role;
  identity.description = absl::StrCat("token of line ", found->line);
  return identity;
}

absl::StatusOr<CertRoleTable> CertRoleTable::Parse(absl::string_view text) {
  CertRoleTable table;
  absl::flat_hash_map<std::string, int> lines;
  absl::Status s = ForEachRoleLine(text, "name", [&](const RoleLine& line, int number) {
    auto [it, inserted] = lines.emplace(line.value, number);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat("line ", number, ": duplicate name \"",
                                                     line.value, "\" (also on line ", it->second,
                                                     ")"));
    }
    table.roles_.emplace(line.value, line.role);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  if (table.roles_.empty()) return absl::InvalidArgumentError("no certificate names");
  return table;
}

absl::StatusOr<CertRoleTable> CertRoleTable::Load(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  auto table = Parse(*text);
  if (!table.ok()) return WithPath(table.status(), path);
  return table;
}

Identity CertRoleTable::Find(const std::vector<std::string>& names) const {
  Identity identity;
  identity.authenticated = true;
  for (const std::string& name : names) {
    auto it = roles_.find(name);
    if (it == roles_.end()) continue;
    if (!identity.role.has_value() || it->second > *identity.role) {
      identity.role = it->second;
      identity.description = absl::StrCat("certificate \"", name, "\"");
    }
  }
  if (!identity.role.has_value()) {
    identity.description = names.empty() ? std::string("certificate")
                                         : absl::StrCat("certificate \"", names.front(), "\"");
  }
  return identity;
}

Identity Authorizer::Identify(std::optional<absl::string_view> authorization,
                              const std::vector<std::string>& cert_names) const {
  if (authorization.has_value() && tokens_.has_value()) {
    absl::string_view value = absl::StripAsciiWhitespace(*authorization);
    // The scheme is case-insensitive (RFC 9110 11.1): Bearer, bearer, BEARER.
    const size_t space = value.find_first_of(" \t");
    if (space == absl::string_view::npos ||
        !absl::EqualsIgnoreCase(value.substr(0, space), "Bearer")) {
      Identity identity;
      identity.problem = "the authorization header is not `Bearer TOKEN`";
      return identity;
    }
    return tokens_->Find(absl::StripAsciiWhitespace(value.substr(space)));
  }
  if (!cert_names.empty() && cert_roles_.has_value()) return cert_roles_->Find(cert_names);
  Identity identity;
  if (!enabled()) {  // auth is off: everyone may do everything
    identity.authenticated = true;
    identity.role = Role::kAdmin;
    identity.description = "caller (auth is off)";
  }
  return identity;
}

}  // namespace clickd::auth
