#!/usr/bin/env bash
# Validates deploy/k8s/ offline (ctest deploy_k8s):
#
#   check_k8s.sh WORK_DIR [CLICKD_BINARY]
#
# Installs deploy/validate's npm packages (kubernetes-models,
# @kubernetes-models/prometheus-operator, js-yaml; exact versions from its
# package-lock.json) into WORK_DIR, once per lock file, then runs
# validate.mjs on the manifests: schemas, cross-object consistency, the
# container's flags against CLICKD_BINARY --helpfull and the ConfigMap's
# config loaded by the real binary, the NATS ConfigMap's nats.conf tested by
# the real nats-server (`nats-server -t`; NATS_SERVER, default: the one on
# PATH or /usr/local/bin/nats-server, skipped with a note when there is none), and
# in-memory broken copies that must fail. Last, broken copies on disk
# (containerPort as a string; clickd's --nats_url naming a NATS pod that does
# not exist) must make validate.mjs exit non-zero with the expected message.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:?usage: check_k8s.sh WORK_DIR [CLICKD_BINARY]}
clickd=${2:-}
src="$root/deploy/validate"

mkdir -p "$work"
cp "$src/package.json" "$src/package-lock.json" "$src/validate.mjs" "$work/"
if ! cmp -s "$src/package-lock.json" "$work/node_modules/.clickd-package-lock.json" 2>/dev/null; then
  echo "check_k8s: npm ci in $work"
  (cd "$work" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$src/package-lock.json" "$work/node_modules/.clickd-package-lock.json"
fi

nats_server=${NATS_SERVER:-$(command -v nats-server || true)}
if [[ -z "$nats_server" && -x /usr/local/bin/nats-server ]]; then nats_server=/usr/local/bin/nats-server; fi
if [[ -z "$nats_server" ]]; then
  echo "check_k8s: note: no nats-server (scripts/install_nats.sh); nats.conf not tested by it"
fi

node "$work/validate.mjs" "$root/deploy/k8s" ${clickd:+"--clickd=$clickd"} ${nats_server:+"--nats_server=$nats_server"}

broken=$(mktemp -d)
trap 'rm -rf "$broken"' EXIT
cp "$root"/deploy/k8s/*.yaml "$broken/"
sed -i 's/containerPort: 50051/containerPort: "50051"/' "$broken/statefulset.yaml"
if node "$work/validate.mjs" "$broken" >"$broken/out" 2>&1; then
  echo "check_k8s: FAIL: a StatefulSet with containerPort \"50051\" (a string) passes validation" >&2
  exit 1
fi
if ! grep -q "containerPort must be integer" "$broken/out"; then
  cat "$broken/out" >&2
  echo "check_k8s: FAIL: the broken manifest failed for another reason than its containerPort" >&2
  exit 1
fi
echo "check_k8s: a broken manifest on disk is rejected: $(grep -m1 'containerPort must be integer' "$broken/out")"

cp "$root"/deploy/k8s/*.yaml "$broken/"
sed -i 's|nats://clickd-nats-2\.clickd-nats:4222|nats://clickd-nats-9.clickd-nats:4222|' "$broken/statefulset.yaml"
if node "$work/validate.mjs" "$broken" >"$broken/out" 2>&1; then
  echo "check_k8s: FAIL: a StatefulSet whose --nats_url names clickd-nats-9 passes validation" >&2
  exit 1
fi
if ! grep -q "clickd-nats-9.clickd-nats is neither a pod" "$broken/out"; then
  cat "$broken/out" >&2
  echo "check_k8s: FAIL: the broken manifest failed for another reason than its --nats_url" >&2
  exit 1
fi
echo "check_k8s: a broken manifest on disk is rejected: $(grep -m1 'clickd-nats-9' "$broken/out")"
