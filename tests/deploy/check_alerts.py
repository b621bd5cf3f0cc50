#!/usr/bin/python3
"""Checks the Prometheus configuration and alert rules under deploy/prometheus/.

  check_alerts.py                         run every check (ctest deploy_prometheus)
  check_alerts.py --write-prometheusrule  regenerate deploy/k8s/prometheusrule.yaml

Fails (exit 1, one line per problem) unless:
  - `promtool check rules` accepts rules/clickd_alerts.yml and
    `promtool check config` accepts prometheus.yml;
  - `promtool test rules rules/clickd_alerts_test.yml` passes, and every alert
    is tested both firing and not firing;
  - every alert has a severity label (critical or warning), summary and
    description annotations, and a runbook_url docs/runbooks.md#<anchor>
    whose anchor is a heading of docs/runbooks.md;
  - every expression names only clickd's metrics (promql_names.py) or `up`;
  - deploy/k8s/prometheusrule.yaml carries exactly the same groups;
  - mutated copies of the rules (MUTATIONS below) fail the unit tests, so the
    tests do pin the thresholds and durations.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import promql_names  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROM_DIR = os.path.join(ROOT, "deploy/prometheus")
RULES = os.path.join(PROM_DIR, "rules/clickd_alerts.yml")
RULES_TEST = os.path.join(PROM_DIR, "rules/clickd_alerts_test.yml")
CONFIG = os.path.join(PROM_DIR, "prometheus.yml")
RUNBOOK = os.path.join(ROOT, "docs/runbooks.md")
PROMETHEUSRULE = os.path.join(ROOT, "deploy/k8s/prometheusrule.yaml")
SEVERITIES = {"critical", "warning"}

# (alert, text in its expr, replacement): each must make `promtool test rules` fail.
MUTATIONS = [
    ("ClickdHighErrorRatio", ") > 0.05", ") > 0.5"),
    ("ClickdLoglossRegression", "1.10 *", "1.30 *"),
    ("ClickdCalibrationOff", "> 1.25", "> 1.5"),
    ("ClickdSnapshotTooOld", "> 3600", "> 7200"),
    ("ClickdDown", "== 0", "== 1"),
    ("ClickdUpdateLogBacklog", "> 1e6", "> 1e7"),
    ("ClickdSnapshotTooOld", "lag_records{job=\"clickd\"} > 0", "lag_records{job=\"clickd\"} >= 0"),
    ("ClickdSnapshotRejected", "> 0", "> 1"),
    ("ClickdReplicaLagging", "lag_seconds{job=\"clickd\"} > 30", "lag_seconds{job=\"clickd\"} > 60"),
    ("ClickdReplicaLagging", "> 1000", "> 100"),
    ("ClickdReplicaLagging", "[10m]) > 0", "[10m]) >= 0"),
    ("ClickdNatsUnreachable", "== 0", "== 1"),
    ("ClickdNatsUnreachable", "for: 2m", "for: 30s"),
    ("ClickdReplicationPublishFailures", "> 0", "> 0.2"),
    ("ClickdWorkQueueNearlyFull", "> 0.5", "> 0.8"),
    ("ClickdWorkQueueNearlyFull", "> 0.5", ">= 0.5"),
    ("ClickdWorkQueueNearlyFull", "for: 5m", "for: 2m"),
    ("ClickdOpenStreamsNearLimit", "> 0.8", "> 0.9"),
    ("ClickdOpenStreamsNearLimit", "> 0.8", ">= 0.8"),
    ("ClickdOpenStreamsNearLimit", "for: 5m", "for: 2m"),
    ("ClickdJoinBufferFull", "> 0.9", "> 0.95"),
    ("ClickdJoinBufferFull", "> 0.9", ">= 0.9"),
    ("ClickdJoinBufferFull", "[5m]) > 0", "[5m]) > 1"),
    ("ClickdJoinBufferFull", "for: 5m", "for: 10m"),
    ("ClickdKafkaLagGrowing", "> 300", ">= 300"),
    ("ClickdKafkaLagGrowing", "for: 10m", "for: 5m"),
]

PROMETHEUSRULE_HEADER = """\
# The alert rules of deploy/prometheus/rules/clickd_alerts.yml for the
# Prometheus operator. Generated: edit clickd_alerts.yml, then run
#   /usr/bin/python3 tests/deploy/check_alerts.py --write-prometheusrule
# (the deploy_prometheus test fails while the two differ). Your Prometheus's
# ruleSelector must match its labels (kube-prometheus-stack: release=<name>).
"""


def run(args, cwd):
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def heading_anchors(markdown):
    """Returns the GitHub anchors of a Markdown file's headings."""
    anchors = set()
    for line in markdown.splitlines():
        match = re.match(r"#{1,6}\s+(.*)", line)
        if match:
            text = re.sub(r"[`*_]", "", match.group(1)).strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return anchors


def alerts_of(groups):
    return [rule for group in groups for rule in group.get("rules", []) if "alert" in rule]


def check_rules_content(groups, errors):
    try:
        with open(RUNBOOK) as f:
            anchors = heading_anchors(f.read())
    except OSError as e:
        errors.append(f"cannot read the runbook: {e}")
        anchors = set()
    names = set()
    for rule in alerts_of(groups):
        name = rule["alert"]
        if name in names:
            errors.append(f"{name}: declared twice")
        names.add(name)
        if rule.get("labels", {}).get("severity") not in SEVERITIES:
            errors.append(f"{name}: severity label must be one of {sorted(SEVERITIES)}")
        annotations = rule.get("annotations", {})
        for key in ("summary", "description", "runbook_url"):
            if not annotations.get(key):
                errors.append(f"{name}: no {key} annotation")
        url = annotations.get("runbook_url", "")
        match = re.fullmatch(r"docs/runbooks\.md#([\w-]+)", url)
        if not match:
            errors.append(f"{name}: runbook_url {url!r} is not docs/runbooks.md#anchor")
        elif match.group(1) not in anchors:
            errors.append(f"{name}: docs/runbooks.md has no heading for #{match.group(1)}")
        for unknown in promql_names.unknown_names(rule["expr"], promql_names.SCRAPE_SERIES):
            errors.append(f"{name}: {unknown} is not a clickd metric")
    return names


def check_test_coverage(names, errors):
    with open(RULES_TEST) as f:
        tests = yaml.safe_load(f)
    firing, silent = set(), set()
    for test in tests.get("tests", []):
        for case in test.get("alert_rule_test", []):
            (firing if case.get("exp_alerts") else silent).add(case["alertname"])
    for name in sorted(names):
        if name not in firing:
            errors.append(f"{name}: no unit test expects it to fire")
        if name not in silent:
            errors.append(f"{name}: no unit test expects it not to fire")


def prometheusrule_text(rules_text):
    groups = yaml.safe_load(rules_text)["groups"]
    body = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "clickd",
                     "labels": {"app.kubernetes.io/name": "clickd",
                                "app.kubernetes.io/component": "server"}},
        "spec": {"groups": groups},
    }
    return PROMETHEUSRULE_HEADER + yaml.safe_dump(body, sort_keys=False, width=100)


def check_mutations(rules_text, errors):
    """Runs the unit tests against mutated rules; each run must fail."""
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(RULES_TEST, tmp)
        for alert, old, new in MUTATIONS:
            start = rules_text.index(f"- alert: {alert}\n")
            end = rules_text.find("- alert:", start + 1)
            end = len(rules_text) if end < 0 else end
            if old not in rules_text[start:end]:
                errors.append(f"mutation of {alert}: {old!r} is not in its rule")
                continue
            mutated = rules_text[:start] + rules_text[start:end].replace(old, new, 1) + rules_text[end:]
            with open(os.path.join(tmp, "clickd_alerts.yml"), "w") as f:
                f.write(mutated)
            code, _ = run(["promtool", "test", "rules", "clickd_alerts_test.yml"], tmp)
            if code == 0:
                errors.append(f"the unit tests pass with {alert}'s {old!r} changed to {new!r}")


def main():
    with open(RULES) as f:
        rules_text = f.read()
    if sys.argv[1:] == ["--write-prometheusrule"]:
        with open(PROMETHEUSRULE, "w") as f:
            f.write(prometheusrule_text(rules_text))
        print(f"check_alerts: wrote {PROMETHEUSRULE}")
        return 0
    if not shutil.which("promtool"):
        print("check_alerts: promtool not found (Debian package prometheus; scripts/install_deps.sh)")
        return 1
    errors = []
    for args, cwd in ((["promtool", "check", "rules", "rules/clickd_alerts.yml"], PROM_DIR),
                      (["promtool", "check", "config", "prometheus.yml"], PROM_DIR),
                      (["promtool", "test", "rules", "rules/clickd_alerts_test.yml"], PROM_DIR)):
        code, output = run(args, cwd)
        print(f"$ {' '.join(args)}\n{output.rstrip()}")
        if code != 0:
            errors.append(f"{' '.join(args)} failed")
    groups = yaml.safe_load(rules_text)["groups"]
    names = check_rules_content(groups, errors)
    check_test_coverage(names, errors)
    try:
        with open(PROMETHEUSRULE) as f:
            k8s = yaml.safe_load(f)
        if k8s.get("spec", {}).get("groups") != groups:
            errors.append("deploy/k8s/prometheusrule.yaml differs from clickd_alerts.yml; run "
                          "/usr/bin/python3 tests/deploy/check_alerts.py --write-prometheusrule")
    except OSError as e:
        errors.append(str(e))
    check_mutations(rules_text, errors)
    for e in errors:
        print(f"check_alerts: {e}")
    if not errors:
        print(f"check_alerts: {len(names)} alerts OK; {len(MUTATIONS)} mutated rule sets fail their tests")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
