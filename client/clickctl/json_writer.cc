#include "client/clickctl/json_writer.h"

#include <cmath>
#include <cstdio>

namespace clickd {

std::string JsonWriter::Quote(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

void JsonWriter::Key(std::string_view key) {
  if (out_.size() > 1) out_ += ",";
  out_ += Quote(key);
  out_ += ":";
}

JsonWriter& JsonWriter::Number(std::string_view key, double value) {
  Key(key);
  if (!std::isfinite(value)) {
    out_ += "null";
  } else {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.10g", value);
    out_ += buf;
  }
  return *this;
}

JsonWriter& JsonWriter::Integer(std::string_view key, uint64_t value) {
  Key(key);
  out_ += std::to_string(value);
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view key, std::string_view value) {
  Key(key);
  out_ += Quote(value);
  return *this;
}

JsonWriter& JsonWriter::Bool(std::string_view key, bool value) {
  Key(key);
  out_ += value ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::Object(std::string_view key, const std::string& json) {
  Key(key);
  out_ += json;
  return *this;
}

}  // namespace clickd
