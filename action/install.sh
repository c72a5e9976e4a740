#!/usr/bin/env bash
# Install drover for the GitHub Action into "$ROOT/bin/drover", without building it when
# a binary can be had. The download and its checks are the repository's install.sh (the
# one users run); this script decides what to ask it for:
#   1. BINARY_URL: that binary, refused unless its SHA-256 is BINARY_SHA256;
#   2. a release version (VERSION=vX.Y.Z, see action/version.sh) on a Linux x86_64 or
#      arm64 runner: the release's static binary, refused unless its SHA-256 is the one
#      the release's SHA256SUMS lists (and BINARY_SHA256, when given);
#   3. otherwise nothing is installed: `installed=false` tells the action to build from
#      its own sources.
# A checksum that does not match is never worked around: the step fails (exit 2).
# Writes `installed=true|false` to $GITHUB_OUTPUT.
set -euo pipefail

: "${ROOT:?}" "${GITHUB_OUTPUT:?}"
VERSION="${VERSION:-}"
REPO="${REPO:-}"
# EXPLICIT_VERSION: the `version` input as given (empty: the action's own ref). A version
# or a binary-sha256 the user asked for is never traded for a build of other sources.
EXPLICIT_VERSION="${EXPLICIT_VERSION:-}"
BINARY_URL="${BINARY_URL:-}"
BINARY_SHA256="${BINARY_SHA256:-}"
installer="$(dirname "$0")/../install.sh"

# No release binary can be had: build from the action's sources, unless the user asked
# for a release or a binary by its checksum.
no_release() { # MESSAGE
  if [ -n "$EXPLICIT_VERSION" ] || [ -n "$BINARY_SHA256" ]; then
    echo "::error title=drover::$1; version/binary-sha256 ask for a release binary, so drover is not built from other sources instead"
    exit 2
  fi
  echo "drover: $1; building from the action's sources"
  echo "installed=false" >> "$GITHUB_OUTPUT"
  exit 0
}

# Run install.sh; exit 0 installed, 2 refused, 4 nothing to install.
install() {
  local status=0
  GITHUB_ACTIONS=true bash "$installer" --to "$ROOT/bin" "$@" || status=$?
  case "$status" in
    0) echo "installed=true" >> "$GITHUB_OUTPUT" ;;
    4) return 4 ;;
    *) exit 2 ;;
  esac
}

if [ -n "$BINARY_URL" ]; then
  if [ -z "$BINARY_SHA256" ]; then
    echo "::error title=drover::binary-url needs binary-sha256, the 64-hex-digit SHA-256 of the binary"
    exit 2
  fi
  # A binary asked for by its checksum that cannot be downloaded fails the step.
  install --url "$BINARY_URL" --sha256 "$BINARY_SHA256" || exit 2
  exit 0
fi

case "${RUNNER_OS:-}/${RUNNER_ARCH:-}" in
  Linux/X64) target=x86_64-unknown-linux-musl ;;
  Linux/ARM64) target=aarch64-unknown-linux-musl ;;
  *) target="" ;;
esac
if ! printf '%s' "$VERSION" | grep -Eq '^v[0-9]+\.[0-9]+\.[0-9]+$'; then
  no_release "'${VERSION:-none}' is not a release version (vX.Y.Z)"
fi
if [ -z "$target" ]; then
  no_release "there is no release binary for ${RUNNER_OS:-?}/${RUNNER_ARCH:-?}"
fi
pin=()
if [ -n "$BINARY_SHA256" ]; then
  pin=(--sha256 "$BINARY_SHA256")
fi
install --version "$VERSION" --target "$target" --repo "$REPO" "${pin[@]}" ||
  no_release "no release binary drover-$target for $VERSION"
