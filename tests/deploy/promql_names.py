"""The metric catalog clickd exports, and the metric names a PromQL expression uses.

Shared by check_dashboard.py and check_alerts.py, so that the Grafana
dashboard and the alert rules are held to the same list of names. The list
is the exporter's contract (issue 5): change it here together with the
exporter, the dashboard, the rules, docs/operations.md and docs/runbooks.md.
"""
import re

COUNTERS = {
    "clickd_requests_total",
    "clickd_predictions_total",
    "clickd_update_examples_total",
    "clickd_snapshot_failures_total",
    "clickd_replication_publish_failures_total",
    "clickd_replication_rejected_records_total",
    "clickd_replication_checkpoint_comparisons_total",
    "clickd_replication_checkpoint_mismatches_total",
    "clickd_replication_duplicate_records_total",
    "clickd_model_impressions_logged_total",
    "clickd_model_impressions_refused_total",
    "clickd_model_impressions_expired_total",
    "clickd_model_feedback_items_total",
    "clickd_model_feedback_steps_total",
    "clickd_model_coordinates_evicted_total",
    "clickd_model_coordinates_expired_total",
    "clickd_model_admission_sightings_total",
    "clickd_model_admission_admitted_total",
    "clickd_kafka_records_learned_total",
    "clickd_kafka_records_rejected_total",
    "clickd_kafka_rebalances_total",
}
GAUGES = {
    "clickd_kafka_lag_records",
    "clickd_kafka_lag_seconds",
    "clickd_kafka_position",
    "clickd_executor_queued_calls",
    "clickd_executor_running_calls",
    "clickd_executor_max_queued_calls",
    "clickd_executor_worker_threads",
    "clickd_open_streams",
    "clickd_max_open_streams",
    "clickd_model_logloss",
    "clickd_model_auc",
    "clickd_model_calibration",
    "clickd_model_progressive_examples",
    "clickd_model_coordinates",
    "clickd_model_bytes",
    "clickd_model_memory_budget_bytes",
    "clickd_model_admission_filter_bytes",
    "clickd_model_updates",
    "clickd_build_info",
    "clickd_process_start_time_seconds",
    "clickd_update_log_bytes",
    "clickd_update_log_lag_records",
    "clickd_snapshot_bytes",
    "clickd_snapshot_last_success_timestamp_seconds",
    "clickd_restore_duration_seconds",
    "clickd_restore_rejected_snapshots",
    "clickd_replication_applied_sequence",
    "clickd_replication_stream_sequence",
    "clickd_replication_lag_records",
    "clickd_replication_lag_seconds",
    "clickd_nats_connected",
    "clickd_replication_published_snapshot_sequence",
    "clickd_replication_broken",
    "clickd_model_version",
    "clickd_replication_broken",
    "clickd_replication_rejected_records_total",
    "clickd_replication_diverged",
    "clickd_replication_peers_disagreeing",
    "clickd_replication_peers_agreeing",
    "clickd_replication_min_live_applied_sequence",
    "clickd_model_variant_loss",
    "clickd_model_variant_champion",
    "clickd_model_variant_examples",
    "clickd_model_variant_coordinates",
    "clickd_model_join_buffer_impressions",
    "clickd_model_join_buffer_bytes",
    "clickd_model_join_buffer_max_bytes",
    "clickd_model_calibration_ratio",
    "clickd_model_calibration_fit",
    "clickd_model_calibration_examples",
}
HISTOGRAMS = {
    "clickd_request_duration_seconds",
    "clickd_update_log_sync_duration_seconds",
    "clickd_snapshot_duration_seconds",
    "clickd_replication_publish_seconds",
    "clickd_model_label_delay_seconds",
}
# The metrics clickd exports only with --replication=jetstream
# (docs/replication.md); a server without it has none of these series.
REPLICATION = {
    "clickd_replication_applied_sequence",
    "clickd_replication_stream_sequence",
    "clickd_replication_lag_records",
    "clickd_replication_lag_seconds",
    "clickd_replication_publish_seconds",
    "clickd_replication_publish_failures_total",
    "clickd_nats_connected",
    "clickd_replication_published_snapshot_sequence",
    "clickd_model_version",
    "clickd_replication_broken",
    "clickd_replication_rejected_records_total",
    "clickd_replication_diverged",
    "clickd_replication_peers_disagreeing",
    "clickd_replication_peers_agreeing",
    "clickd_replication_min_live_applied_sequence",
    "clickd_replication_checkpoint_comparisons_total",
    "clickd_replication_checkpoint_mismatches_total",
    "clickd_replication_duplicate_records_total",
}
# The metrics of models with variants only (docs/variants.md); a server
# whose models have none has none of these series.
VARIANTS = {
    "clickd_model_variant_loss",
    "clickd_model_variant_champion",
    "clickd_model_variant_examples",
    "clickd_model_variant_coordinates",
}
# The metrics of models that learn from a Kafka topic only (docs/kafka.md);
# a server without such a model has none of these series.
KAFKA = {name for name in COUNTERS | GAUGES if name.startswith("clickd_kafka_")}
# A calibrated model's figures that wait for its data: the ratio for its
# first click, the fit for its first fit (10,000 examples).
CALIBRATION_PENDING = {
    "clickd_model_calibration_ratio",
    "clickd_model_calibration_fit",
}
# Every name a query may select: a histogram is read through its series.
SERIES = COUNTERS | GAUGES | {h + s for h in HISTOGRAMS for s in ("_bucket", "_sum", "_count")}
# Series Prometheus itself adds to every scrape target.
SCRAPE_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}

FUNCTIONS = {
    "abs", "absent", "absent_over_time", "avg_over_time", "ceil", "changes", "clamp", "clamp_max",
    "clamp_min", "count_over_time", "day_of_month", "day_of_week", "days_in_month", "delta",
    "deriv", "exp", "floor", "histogram_quantile", "holt_winters", "hour", "idelta", "increase",
    "irate", "label_join", "label_replace", "last_over_time", "ln", "log10", "log2",
    "max_over_time", "min_over_time", "minute", "month", "predict_linear",
    "present_over_time", "quantile_over_time", "rate", "resets", "round", "scalar", "sgn",
    "sort", "sort_desc", "sqrt", "stddev_over_time", "stdvar_over_time", "sum_over_time",
    "time", "timestamp", "vector", "year",
}
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
                "count_values", "bottomk", "topk", "quantile"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
            "group_left", "group_right", "inf", "nan"}

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_BRACES = re.compile(r"\{[^{}]*\}")
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
_LABEL_LIST = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENT = re.compile(r"(?<![\w:.$])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?")


def names_in(expr):
    """Returns (metric names, function names) that a PromQL expression uses."""
    text = _STRING.sub('""', expr)
    text = _BRACES.sub("", text)
    text = _BRACKETS.sub("", text)
    text = _LABEL_LIST.sub(" ", text)
    metrics, functions = set(), set()
    for match in _IDENT.finditer(text):
        name, call = match.group(1), match.group(2)
        if name.lower() in KEYWORDS:
            continue
        if call and (name in FUNCTIONS or name in AGGREGATIONS):
            functions.add(name)
        elif name in AGGREGATIONS and not call:
            # "sum by (x) (...)": the label list was cut out above.
            functions.add(name)
        else:
            metrics.add(name)
    return metrics, functions


def unknown_names(expr, extra=frozenset()):
    """Returns the names in expr that are neither clickd's series nor in extra."""
    metrics, _ = names_in(expr)
    return sorted(m for m in metrics if m not in SERIES and m not in extra)


def base_metric(series):
    """Returns the metric a series belongs to (a histogram's _bucket -> the histogram)."""
    for suffix in ("_bucket", "_sum", "_count"):
        if series.endswith(suffix) and series[: -len(suffix)] in HISTOGRAMS:
            return series[: -len(suffix)]
    return series
