// Prometheus' rules for metric and label names, and how misuse is reported.
#ifndef CLICKD_SERVER_METRICS_NAMING_H_
#define CLICKD_SERVER_METRICS_NAMING_H_

#include <string>
#include <string_view>

namespace clickd::metrics {

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsValidMetricName(std::string_view name);

// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved for Prometheus).
bool IsValidLabelName(std::string_view name);

// Metric and label names are constants of the program, so a bad one (or two
// families with one name) is a bug in the program, not an error to handle:
// this reports it on stderr and aborts, at startup, where the family or
// series is built.
[[noreturn]] void FailOnMisuse(const std::string& what);

}  // namespace clickd::metrics

#endif  // CLICKD_SERVER_METRICS_NAMING_H_
