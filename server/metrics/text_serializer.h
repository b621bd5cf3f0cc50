// The Prometheus text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/):
//
//   # HELP clickd_requests_total RPCs handled.
//   # TYPE clickd_requests_total counter
//   clickd_requests_total{code="OK",method="Predict"} 42
//   # HELP clickd_request_duration_seconds ...
//   # TYPE clickd_request_duration_seconds histogram
//   clickd_request_duration_seconds_bucket{method="Predict",le="0.001"} 40
//   clickd_request_duration_seconds_bucket{method="Predict",le="+Inf"} 42
//   clickd_request_duration_seconds_sum{method="Predict"} 0.0213
//   clickd_request_duration_seconds_count{method="Predict"} 42
//
// Every family gets its HELP and TYPE lines, even with no series. Labels
// print in name order (a histogram's `le` last). Pure functions.
#ifndef CLICKD_SERVER_METRICS_TEXT_SERIALIZER_H_
#define CLICKD_SERVER_METRICS_TEXT_SERIALIZER_H_

#include <string>
#include <string_view>
#include <vector>

#include "server/metrics/metric_family.h"

namespace clickd::metrics {

// The Content-Type of SerializeText's output.
inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

std::string SerializeText(const std::vector<MetricFamily>& families);

// HELP text: backslash -> \\, newline -> \n.
std::string EscapeHelp(std::string_view help);

// A label value: backslash -> \\, double quote -> \", newline -> \n.
std::string EscapeLabelValue(std::string_view value);

// A sample value or bucket bound: "NaN", "+Inf", "-Inf"; integers below
// 2^53 in plain digits ("42"); anything else in the shortest form that
// reads back to the same double ("0.25", "2.5e-05"), as Go's
// strconv.FormatFloat(v, 'g', -1, 64) writes it.
std::string FormatValue(double value);

}  // namespace clickd::metrics

#endif  // CLICKD_SERVER_METRICS_TEXT_SERIALIZER_H_
