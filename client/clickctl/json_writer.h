// JsonWriter: builds one JSON object on a single line, for `--json` output
// whose last line scripts parse. Non-finite numbers become null (JSON has no
// NaN). Not thread-safe.
#ifndef CLICKD_CLIENT_CLICKCTL_JSON_WRITER_H_
#define CLICKD_CLIENT_CLICKCTL_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace clickd {

class JsonWriter {
 public:
  JsonWriter() : out_("{") {}

  JsonWriter& Number(std::string_view key, double value);
  JsonWriter& Integer(std::string_view key, uint64_t value);
  JsonWriter& String(std::string_view key, std::string_view value);
  JsonWriter& Bool(std::string_view key, bool value);
  // Inserts an already-built object (another JsonWriter's Finish()).
  JsonWriter& Object(std::string_view key, const std::string& json);
  std::string Finish() const { return out_ + "}"; }

  static std::string Quote(std::string_view text);

 private:
  void Key(std::string_view key);
  std::string out_;
};

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_JSON_WRITER_H_
