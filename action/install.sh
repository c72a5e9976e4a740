#!/usr/bin/env bash
# Install drover for the GitHub Action into "$ROOT/bin/drover", without building it when
# a binary can be had:
#   1. BINARY_URL: that binary, refused unless its SHA-256 is BINARY_SHA256;
#   2. a release version (VERSION=vX.Y.Z, the action's tag by default) on a Linux x86_64
#      or arm64 runner: the release's static binary, refused unless its SHA-256 is the
#      one the release's SHA256SUMS lists (and BINARY_SHA256, when given);
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
# A mirror of the releases (DROVER_RELEASES_URL) may be given; over plain http only to
# this machine's loopback address (tests).
RELEASES_URL="${DROVER_RELEASES_URL:-https://github.com/$REPO/releases/download}"
BINARY_URL="${BINARY_URL:-}"
BINARY_SHA256="$(printf '%s' "${BINARY_SHA256:-}" | tr 'A-F' 'a-f')"

fetch() { # URL FILE
  local proto='=https'
  if [ -n "${DROVER_RELEASES_URL:-}" ] && [[ "$1" =~ ^http://127\.0\.0\.1:[0-9]+/[^@]*$ ]]; then
    proto='=http'
  fi
  curl --fail --silent --show-error --location --proto "$proto" --proto-redir '=https' \
    --connect-timeout 20 --max-time 300 --retry 3 --output "$2" "$1"
}

# No release binary can be had: build from the action's sources, unless the user asked
# for a release or a binary by its checksum.
no_release() { # MESSAGE
  if [ -n "$EXPLICIT_VERSION" ] || [ -n "$BINARY_SHA256" ]; then
    refuse "$1; version/binary-sha256 ask for a release binary, so drover is not built from other sources instead"
  fi
  echo "drover: $1; building from the action's sources"
  echo "installed=false" >> "$GITHUB_OUTPUT"
  exit 0
}

refuse() {
  echo "::error title=drover::$1"
  rm -f "${tmp:-}" "${sums:-}"
  exit 2
}

install_verified() { # FILE
  mkdir -p "$ROOT/bin"
  install -m 0755 "$1" "$ROOT/bin/drover"
  rm -f "$1"
  echo "installed=true" >> "$GITHUB_OUTPUT"
}

if [ -n "$BINARY_URL" ]; then
  if ! printf '%s' "$BINARY_SHA256" | grep -Eq '^[0-9a-f]{64}$'; then
    refuse "binary-url needs binary-sha256, the 64-hex-digit SHA-256 of the binary"
  fi
  tmp=$(mktemp)
  fetch "$BINARY_URL" "$tmp" || refuse "cannot download $BINARY_URL"
  got=$(sha256sum "$tmp" | cut -d' ' -f1)
  [ "$got" = "$BINARY_SHA256" ] || refuse "the binary at binary-url has SHA-256 $got, not $BINARY_SHA256; refusing to run it"
  install_verified "$tmp"
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

sums=$(mktemp)
tmp=$(mktemp)
if ! fetch "$RELEASES_URL/$VERSION/SHA256SUMS" "$sums" || ! fetch "$RELEASES_URL/$VERSION/drover-$target" "$tmp"; then
  rm -f "$tmp" "$sums"
  no_release "no release binary drover-$target for $VERSION at $RELEASES_URL"
fi
want=$(awk -v f="drover-$target" '$2 == f || $2 == "*" f { print tolower($1) }' "$sums")
[ -n "$want" ] || refuse "SHA256SUMS of $VERSION lists no drover-$target"
got=$(sha256sum "$tmp" | cut -d' ' -f1)
[ "$got" = "$want" ] || refuse "drover-$target of $VERSION has SHA-256 $got, but its SHA256SUMS says $want; refusing to run it"
if [ -n "$BINARY_SHA256" ] && [ "$got" != "$BINARY_SHA256" ]; then
  refuse "drover-$target of $VERSION has SHA-256 $got, not the pinned binary-sha256 $BINARY_SHA256; refusing to run it"
fi
rm -f "$sums"
install_verified "$tmp"
