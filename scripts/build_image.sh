#!/usr/bin/env bash
# Builds the clickd container image with podman (no Docker engine needed)
# and smoke-tests it:
#
#   1. installs podman and debootstrap if missing;
#   2. makes the base image debian:bookworm-slim locally if podman lacks it:
#      debootstrap --variant=minbase bookworm into a cached root filesystem
#      ($CLICKD_IMAGE_CACHE/rootfs, reused when present), then podman import;
#   3. podman build --isolation=chroot -t $CLICKD_IMAGE_TAG . (the Dockerfile);
#   4. smoke test, since `podman run` cannot work here: mounts the image,
#      checks every shared library of the two binaries resolves, then, in a
#      private mount namespace with /proc and /dev bound in, chroots into it
#      and starts the image's ENTRYPOINT + CMD as the image's non-root user
#      (uid 10001) on 127.0.0.1 (port picked by the kernel), calls it with the
#      image's own clickctl (models list, update, predict), stops it with
#      SIGTERM by PID and expects exit status 0. Scrapes /metrics too when the
#      binary has --metrics_port.
#
# Prints how long each step took. Needs root (debootstrap, mounts, chroot):
# re-runs itself with sudo otherwise.
# Environment: CLICKD_IMAGE_TAG (clickd:dev), CLICKD_IMAGE_CACHE
# (/var/cache/clickd-image), DEBIAN_MIRROR (http://deb.debian.org/debian).
set -euo pipefail
cd "$(dirname "$0")/.."

TAG=${CLICKD_IMAGE_TAG:-clickd:dev}
CACHE=${CLICKD_IMAGE_CACHE:-/var/cache/clickd-image}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE=debian:bookworm-slim
APP_UID=10001

if [ "$(id -u)" -ne 0 ]; then
  exec sudo --preserve-env=CLICKD_IMAGE_TAG,CLICKD_IMAGE_CACHE,DEBIAN_MIRROR \
    bash "$PWD/scripts/build_image.sh" "$@"
fi

mkdir -p "$CACHE"
script_start=$SECONDS
step_start=$SECONDS
timings=()
# Records how long the step that just ended took.
step_done() {
  timings+=("$(printf '%-34s %4ds' "$1" $((SECONDS - step_start)))")
  step_start=$SECONDS
}
log() { echo "build_image: $*" >&2; }

# --- 1. tools ----------------------------------------------------------------
if ! command -v podman >/dev/null || ! command -v debootstrap >/dev/null; then
  log "installing podman and debootstrap"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman debootstrap
fi
step_done "tools"

# --- 2. base image -------------------------------------------------------------
# Writes what the official debian:bookworm-slim has and minbase lacks: the
# updates and security suites, and dpkg excludes for docs, man pages, locales.
make_slim() {
  local root=$1
  rm -f "$root/etc/apt/sources.list"
  cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  cat >"$root/etc/dpkg/dpkg.cfg.d/slim-excludes" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
  # As the official image: apt keeps no downloaded packages or caches.
  cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
  rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/*
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin "$root"/var/lib/apt/lists/*
}

if ! podman image exists "$BASE"; then
  rootfs="$CACHE/rootfs"
  if [ ! -f "$rootfs/.clickd-complete" ]; then
    log "debootstrap --variant=minbase bookworm into $rootfs (takes a few minutes)"
    mkdir -p "$CACHE"
    rm -rf "$rootfs.tmp" "$rootfs"
    debootstrap --variant=minbase bookworm "$rootfs.tmp" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
      || { tail -20 "$CACHE/debootstrap.log" >&2; exit 1; }
    make_slim "$rootfs.tmp"
    touch "$rootfs.tmp/.clickd-complete"
    mv "$rootfs.tmp" "$rootfs"
  else
    log "reusing the root filesystem in $rootfs"
  fi
  log "podman import $rootfs as $BASE"
  tar -C "$rootfs" --exclude=./.clickd-complete -c . | podman import - "$BASE" >"$CACHE/podman-import.log" 2>&1 \
    || { cat "$CACHE/podman-import.log" >&2; exit 1; }
else
  log "base image $BASE present"
fi
step_done "base image"

# --- 3. build ------------------------------------------------------------------
old_id=$(podman image inspect --format '{{.Id}}' "$TAG" 2>/dev/null || true)
log "podman build --isolation=chroot -t $TAG ."
podman build --isolation=chroot --build-arg VERSION="$(git describe --always --dirty 2>/dev/null || echo dev)" \
  -t "$TAG" . >"$CACHE/podman-build.log" 2>&1 \
  || { tail -40 "$CACHE/podman-build.log" >&2; log "podman build failed; log: $CACHE/podman-build.log"; exit 1; }
new_id=$(podman image inspect --format '{{.Id}}' "$TAG")
# The previous build of this tag, now untagged, is ours to remove (only it).
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
  podman rmi "$old_id" >/dev/null 2>&1 || true
fi
step_done "podman build"

# --- 4. smoke test -------------------------------------------------------------
mnt=$(podman image mount "$TAG")
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  podman image unmount "$TAG" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# (Outputs are captured before grep reads them throughout: with pipefail, a
# grep -q that stops reading early would fail the pipeline.)
for bin in clickd clickctl; do
  libs=$(chroot "$mnt" ldd "/usr/local/bin/$bin")
  if grep -q "not found" <<<"$libs"; then
    grep "not found" <<<"$libs" >&2
    log "FAIL: /usr/local/bin/$bin needs libraries the runtime image lacks"
    exit 1
  fi
done

# The command the image runs, with the listening addresses moved to loopback.
readarray -t entrypoint < <(podman image inspect --format '{{range .Config.Entrypoint}}{{println .}}{{end}}' "$TAG" | sed '/^$/d')
readarray -t cmd < <(podman image inspect --format '{{range .Config.Cmd}}{{println .}}{{end}}' "$TAG" | sed '/^$/d')
image_user=$(podman image inspect --format '{{.Config.User}}' "$TAG")
[ "${image_user%%:*}" = "$APP_UID" ] || { log "FAIL: image user is '$image_user', expected $APP_UID"; exit 1; }
overrides=(--address=127.0.0.1:0)
metrics_port=""
help=$(chroot "$mnt" /usr/local/bin/clickd --helpfull 2>&1 || true)
if grep -q -- "--metrics_port " <<<"$help"; then
  metrics_port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  overrides+=(--metrics_address=127.0.0.1 --metrics_port="$metrics_port")
fi
if grep -q -- "--data_dir " <<<"$help"; then
  overrides+=(--data_dir=/var/lib/clickd)
fi

work=$(mktemp -d)
out="$work/clickd.out"
# A private mount namespace: the /proc, /dev and tmpfs mounts vanish with it,
# whatever happens. unshare and chroot exec, so $! ends up being clickd.
unshare --mount --propagation private -- bash -c '
  set -e
  m=$1; shift
  mount --bind /proc "$m/proc"
  mount --bind /dev "$m/dev"
  mount -t tmpfs -o mode=0750,uid='"$APP_UID"',gid='"$APP_UID"' tmpfs "$m/var/lib/clickd"
  mount -t tmpfs -o mode=1777 tmpfs "$m/tmp"
  cd "$m/var/lib/clickd"
  exec chroot --userspec='"$APP_UID:$APP_UID"' "$m" "$@"' \
  smoke "$mnt" "${entrypoint[@]}" "${cmd[@]}" "${overrides[@]}" >"$out" 2>&1 &
server_pid=$!

port=""
for _ in $(seq 100); do
  port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$out")
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$port" ]; then
  cat "$out" >&2
  log "FAIL: clickd in the image did not start"
  exit 1
fi
user_seen=$(awk '/^Uid:/ {print $2}' "/proc/$server_pid/status")
log "clickd from the image serves on 127.0.0.1:$port as uid $user_seen"
[ "$user_seen" = "$APP_UID" ] || { log "FAIL: clickd runs as uid $user_seen"; exit 1; }

# The image's own clickctl, in the host's namespaces (it needs no /proc).
clickctl() { chroot --userspec="$APP_UID:$APP_UID" "$mnt" /usr/local/bin/clickctl "$@" --server=127.0.0.1:"$port" --deadline_ms=5000; }
models=$(clickctl models list --json)
grep -q '"default"' <<<"$models" || { echo "$models" >&2; log "FAIL: models list"; exit 1; }
clickctl update --context='user|country=FR' --example='ad|#7' --label=1 >/dev/null
prediction=$(clickctl predict --context='user|country=FR' --candidates='ad|#7; ad|#8' --json)
grep -q '"prediction"' <<<"$prediction" || { echo "$prediction" >&2; log "FAIL: predict"; exit 1; }
if [ -n "$metrics_port" ]; then
  metrics=$(/usr/bin/python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "http://127.0.0.1:$metrics_port/metrics" || true)
  grep -q '^clickd_requests_total{' <<<"$metrics" \
    || { log "FAIL: /metrics on 127.0.0.1:$metrics_port has no clickd_requests_total"; exit 1; }
  log "/metrics answers on 127.0.0.1:$metrics_port"
fi

kill -TERM "$server_pid"
status=0
for _ in $(seq 150); do
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$server_pid" 2>/dev/null; then
  log "FAIL: clickd did not stop within 15 s of SIGTERM"
  exit 1
fi
wait "$server_pid" || status=$?
server_pid=""
[ "$status" -eq 0 ] || { cat "$out" >&2; log "FAIL: clickd exited $status after SIGTERM"; exit 1; }
rm -rf "$work"
step_done "smoke test"

size=$(podman image inspect --format '{{.Size}}' "$TAG")
log "image $TAG ($new_id): $((size / 1000000)) MB; smoke test passed"
for t in "${timings[@]}"; do log "  $t"; done
log "  total                              $((SECONDS - script_start))s"
