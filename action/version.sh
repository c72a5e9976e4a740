#!/usr/bin/env bash
# Which drover the Action should install: prints a version (vX.Y.Z, a release binary is
# downloaded) or another ref (drover is built from the action's own sources).
#
#   1. EXPLICIT_VERSION (the `version` input), when given: that release.
#   2. The ref the action is used at: the runner's checkout folder of the action,
#      `.../_actions/OWNER/REPO/REF` (GITHUB_ACTION_PATH), else ACTION_REF
#      (`github.action_ref`, which GitHub does not promise inside a composite action and
#      which names the outer action's ref when drover's is used inside another one).
#   3. A release version from step 2 counts only when the sources the runner checked out
#      say the same version (their Cargo.toml): the binary installed is always the one
#      those sources build. Otherwise the sources are built, with a note saying why.
set -euo pipefail

release='^v[0-9]+\.[0-9]+\.[0-9]+$'

if [ -n "${EXPLICIT_VERSION:-}" ]; then
  printf '%s\n' "$EXPLICIT_VERSION"
  exit 0
fi

path="${GITHUB_ACTION_PATH:-}"
ref=""
# A remote action lives in _actions/OWNER/REPO/REF; a local one (`uses: ./`) does not.
if [ -n "$path" ] && [ "$(basename "$(dirname "$(dirname "$(dirname "$path")")")")" = _actions ]; then
  ref=$(basename "$path")
else
  ref="${ACTION_REF:-}"
fi

if ! printf '%s' "$ref" | grep -Eq "$release"; then
  printf '%s\n' "$ref"
  exit 0
fi

# The [package] version of the action's own Cargo.toml.
sources=""
if [ -f "$path/Cargo.toml" ]; then
  sources=$(awk '
    /^\[/ { in_package = ($0 == "[package]") }
    in_package && /^version *= *"/ { sub(/^version *= *"/, ""); sub(/".*/, ""); print; exit }
  ' "$path/Cargo.toml")
fi
if [ "v$sources" = "$ref" ]; then
  printf '%s\n' "$ref"
else
  echo "drover: the action is used at $ref, but its sources are version ${sources:-unknown}; building them rather than downloading the $ref release" >&2
  printf 'sources-of-%s\n' "$ref"
fi
