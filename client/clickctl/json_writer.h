// JsonWriter: builds one JSON object on a single line, for `--json` output
// whose last line scripts parse. A thin builder over nlohmann::ordered_json
// (Debian's nlohmann-json3-dev), so fields keep the order they are added in,
// strings are escaped per RFC 8259 (invalid UTF-8 becomes U+FFFD), doubles
// print as the shortest decimal that reads back as the same double, and
// non-finite numbers become null (JSON has no NaN). Not thread-safe.
#ifndef CLICKD_CLIENT_CLICKCTL_JSON_WRITER_H_
#define CLICKD_CLIENT_CLICKCTL_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace clickd {

class JsonWriter {
 public:
  JsonWriter() : object_(nlohmann::ordered_json::object()) {}

  JsonWriter& Number(std::string_view key, double value);
  // For values that are float in clickd: prints the float's own shortest
  // form (0.3f prints as 0.3, not as 0.30000001192092896).
  JsonWriter& Float(std::string_view key, float value);
  // For doubles that carry a float computed inside clickd (margins and
  // predictions): Float() if `value` is exactly a float, Number() otherwise.
  JsonWriter& FloatValued(std::string_view key, double value);
  JsonWriter& Integer(std::string_view key, uint64_t value);
  JsonWriter& String(std::string_view key, std::string_view value);
  JsonWriter& Bool(std::string_view key, bool value);
  // Inserts an already-built JSON value (another JsonWriter's Finish(), an
  // array); text that does not parse is inserted as null.
  JsonWriter& Object(std::string_view key, const std::string& json);
  std::string Finish() const { return Dump(object_); }

  static std::string Quote(std::string_view text);
  // One-line text of `value`, with invalid UTF-8 replaced instead of thrown.
  static std::string Dump(const nlohmann::ordered_json& value);
  // JSON for a number: null when not finite.
  static nlohmann::ordered_json NumberValue(double value);
  // The double whose shortest decimal form is `value`'s shortest float form.
  static double FloatAsDouble(float value);
  // FloatAsDouble(value) if `value` is exactly a float, else `value`.
  static double ShortestFloatForm(double value);

 private:
  nlohmann::ordered_json object_;
};

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_JSON_WRITER_H_
