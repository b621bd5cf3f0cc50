#include "server/metrics/text_serializer.h"

#include <charconv>
#include <cmath>
#include <cstdint>

namespace clickd::metrics {
namespace {

// Appends `name{labels}` with an optional extra label (a bucket's `le`) last.
void AppendSeries(std::string& out, const std::string& name, std::string_view suffix,
                  const Labels& labels, std::string_view extra_name = {},
                  std::string_view extra_value = {}) {
  out += name;
  out += suffix;
  if (labels.empty() && extra_name.empty()) return;
  out += '{';
  bool first = true;
  auto append_label = [&](std::string_view label, std::string_view value) {
    if (!first) out += ',';
    first = false;
    out += label;
    out += "=\"";
    out += EscapeLabelValue(value);
    out += '"';
  };
  for (const auto& [label, value] : labels) append_label(label, value);
  if (!extra_name.empty()) append_label(extra_name, extra_value);
  out += '}';
}

void AppendSample(std::string& out, const std::string& name, std::string_view suffix,
                  const Labels& labels, double value, std::string_view extra_name = {},
                  std::string_view extra_value = {}) {
  AppendSeries(out, name, suffix, labels, extra_name, extra_value);
  out += ' ';
  out += FormatValue(value);
  out += '\n';
}

void AppendHistogram(std::string& out, const std::string& name, const ClientMetric& m) {
  for (const HistogramBucket& bucket : m.buckets) {
    AppendSample(out, name, "_bucket", m.labels, static_cast<double>(bucket.cumulative_count), "le",
                 FormatValue(bucket.upper_bound));
  }
  AppendSample(out, name, "_sum", m.labels, m.sample_sum);
  AppendSample(out, name, "_count", m.labels, static_cast<double>(m.sample_count));
}

}  // namespace

std::string EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (const char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  char buffer[64];
  std::to_chars_result r;
  if (value == std::trunc(value) && std::abs(value) < kExactIntegers) {
    r = std::to_chars(buffer, buffer + sizeof(buffer), static_cast<int64_t>(value));
  } else {
    r = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::general);
  }
  return std::string(buffer, r.ptr);
}

std::string SerializeText(const std::vector<MetricFamily>& families) {
  std::string out;
  for (const MetricFamily& family : families) {
    out += "# HELP ";
    out += family.name;
    out += ' ';
    out += EscapeHelp(family.help);
    out += "\n# TYPE ";
    out += family.name;
    out += ' ';
    out += MetricTypeName(family.type);
    out += '\n';
    for (const ClientMetric& m : family.metrics) {
      if (family.type == MetricType::kHistogram) {
        AppendHistogram(out, family.name, m);
      } else {
        AppendSample(out, family.name, "", m.labels, m.value);
      }
    }
  }
  return out;
}

}  // namespace clickd::metrics
