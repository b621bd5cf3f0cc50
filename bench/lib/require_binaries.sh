# require_binaries SCRIPT HINT BINARY...: exits 1, naming SCRIPT and HINT
# (how to get it), at the first BINARY that is not an executable file.
# Sourced, never run.
require_binaries() {
  local script=$1 hint=$2
  shift 2
  for binary in "$@"; do
    if [[ ! -x $binary ]]; then
      echo "$script: $binary is missing: $hint" >&2
      exit 1
    fi
  done
}
