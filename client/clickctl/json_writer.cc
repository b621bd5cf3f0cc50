#include "client/clickctl/json_writer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace clickd {

std::string JsonWriter::Dump(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

std::string JsonWriter::Quote(std::string_view text) {
  return Dump(nlohmann::ordered_json(std::string(text)));
}

nlohmann::ordered_json JsonWriter::NumberValue(double value) {
  if (!std::isfinite(value)) return nullptr;
  return value;
}

double JsonWriter::FloatAsDouble(float value) {
  if (!std::isfinite(value)) return value;
  // The fewest significant digits (at most 9, FLT_DECIMAL_DIG) that read
  // back as the same float; nlohmann then prints that decimal for the double.
  char buf[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*g", digits, static_cast<double>(value));
    if (std::strtof(buf, nullptr) == value) break;
  }
  return std::strtod(buf, nullptr);
}

double JsonWriter::ShortestFloatForm(double value) {
  const float narrow = static_cast<float>(value);
  return static_cast<double>(narrow) == value ? FloatAsDouble(narrow) : value;
}

JsonWriter& JsonWriter::Number(std::string_view key, double value) {
  object_[std::string(key)] = NumberValue(value);
  return *this;
}

JsonWriter& JsonWriter::Float(std::string_view key, float value) {
  return Number(key, FloatAsDouble(value));
}

JsonWriter& JsonWriter::FloatValued(std::string_view key, double value) {
  return Number(key, ShortestFloatForm(value));
}

JsonWriter& JsonWriter::Integer(std::string_view key, uint64_t value) {
  object_[std::string(key)] = value;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view key, std::string_view value) {
  object_[std::string(key)] = std::string(value);
  return *this;
}

JsonWriter& JsonWriter::Bool(std::string_view key, bool value) {
  object_[std::string(key)] = value;
  return *this;
}

JsonWriter& JsonWriter::Object(std::string_view key, const std::string& json) {
  object_[std::string(key)] =
      nlohmann::ordered_json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (object_[std::string(key)].is_discarded()) object_[std::string(key)] = nullptr;
  return *this;
}

}  // namespace clickd
