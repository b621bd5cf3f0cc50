// Requests written on the command line: examples in clickctl's compact
// example syntax, and whole messages in protobuf JSON. Pure functions.
//
// The example syntax (docs/clickctl.md):
//
//   example   := namespace (spaces namespace)*        (may be empty)
//   namespace := NS "|" feature ("," feature)*        (NS may be empty)
//   feature   := key [":" value]                      (value: a finite float, default 1)
//   key       := name | "#" uint64                    (# marks a pre-hashed id)
//
// A name is any run of characters other than space, tab, '|', ',', ':' and
// a leading '#'; "user|country=FR,age:30 page|home" is two namespaces with
// three features. Candidates are examples separated by ';'. Anything the
// syntax cannot say is said in JSON (--request_json).
#ifndef CLICKD_CLIENT_CLICKCTL_REQUEST_TEXT_H_
#define CLICKD_CLIENT_CLICKCTL_REQUEST_TEXT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "clickd/v1/clickd.pb.h"
#include "google/protobuf/message.h"

namespace clickd {

// Parses one example; errors start with `flag` ("--context: ...").
absl::StatusOr<v1::Example> ParseExampleText(const std::string& text, const std::string& flag);

// Parses ';'-separated examples; at least one.
absl::StatusOr<std::vector<v1::Example>> ParseCandidatesText(const std::string& text,
                                                             const std::string& flag);

// Parses protobuf JSON into *message: `text` itself when it starts with '{'
// (after blanks), else the contents of the file it names. Errors start with
// `flag`; unknown fields are errors.
absl::Status ParseJsonMessage(const std::string& text, const std::string& flag,
                              google::protobuf::Message* message);

// A message as one line of protobuf JSON with the .proto field names.
std::string ToJsonLine(const google::protobuf::Message& message);

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_REQUEST_TEXT_H_
