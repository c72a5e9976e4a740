#!/usr/bin/env bash
# Install drover's release binary, refused unless its SHA-256 is the one the release's
# SHA256SUMS lists. No Rust toolchain needed.
#
#   curl -fsSL https://raw.githubusercontent.com/OWNER/drover/main/install.sh | bash
#   bash install.sh --version v0.2.0 --to /usr/local/bin
#
# Options:
#   --version vX.Y.Z   the release to install (default: the latest)
#   --to DIR           where `drover` goes (default: $HOME/.local/bin)
#   --repo OWNER/NAME  whose releases (default: $DROVER_REPO, else OWNER/drover)
#   --target TRIPLE    which binary (default: this machine's, x86_64 or aarch64 Linux)
#   --sha256 HEX       require this SHA-256 too (a pin beyond the release's SHA256SUMS)
#   --url URL          install the binary at URL instead of a release (needs --sha256)
#
# Exit codes: 0 installed; 2 bad usage, or a checksum that does not match (never worked
# around: nothing is installed); 4 no release binary can be had (none for this platform,
# no such release, the download failed).
#
# DROVER_RELEASES_URL names a mirror of the releases (`$MIRROR/<version>/<file>`, the
# latest under `latest`); plain http only to 127.0.0.1 (tests).
set -euo pipefail

version=""
to="${HOME:-}/.local/bin"
repo="${DROVER_REPO:-OWNER/drover}"
target=""
pin=""
url=""

say() { echo "drover install: $*" >&2; }
fail() { # CODE MESSAGE
  if [ "${GITHUB_ACTIONS:-}" = true ]; then
    echo "::error title=drover::$2"
  fi
  say "$2"
  exit "$1"
}

while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || fail 2 "$1 needs a value"
  case "$1" in
    --version) version=$2 ;;
    --to) to=$2 ;;
    --repo) repo=$2 ;;
    --target) target=$2 ;;
    --sha256) pin=$(printf '%s' "$2" | tr 'A-F' 'a-f') ;;
    --url) url=$2 ;;
    *) fail 2 "unknown option $1 (see the top of install.sh)" ;;
  esac
  shift 2
done

if [ -n "$version" ] && ! printf '%s' "$version" | grep -Eq '^v[0-9]+\.[0-9]+\.[0-9]+$'; then
  fail 2 "--version $version is not a release version (vX.Y.Z)"
fi
if [ -n "$pin" ] && ! printf '%s' "$pin" | grep -Eq '^[0-9a-f]{64}$'; then
  fail 2 "--sha256 must be the 64 hex digits of a SHA-256"
fi
if ! printf '%s' "$repo" | grep -Eq '^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$'; then
  fail 2 "--repo $repo is not OWNER/NAME"
fi
[ -n "$to" ] || fail 2 "--to needs a directory (HOME is not set)"

sha256() { # FILE
  if command -v sha256sum > /dev/null; then
    sha256sum "$1" | cut -d' ' -f1
  else
    shasum -a 256 "$1" | cut -d' ' -f1
  fi
}

fetch() { # URL FILE
  local proto='=https'
  if [ -n "${DROVER_RELEASES_URL:-}" ] && [[ "$1" =~ ^http://127\.0\.0\.1:[0-9]+/[^@]*$ ]]; then
    proto='=http'
  fi
  curl --fail --silent --show-error --location --proto "$proto" --proto-redir '=https' \
    --connect-timeout 20 --max-time 300 --retry 3 --output "$2" "$1"
}

mkdir -p "$to" || fail 2 "cannot create $to"
# Downloads land beside their destination, so the final rename is atomic.
binary=$(mktemp "$to/.drover-download.XXXXXX")
sums=$(mktemp "$to/.drover-sums.XXXXXX")
trap 'rm -f "$binary" "$sums"' EXIT

if [ -n "$url" ]; then
  [ -n "$pin" ] || fail 2 "--url needs --sha256, the SHA-256 the binary must have"
  fetch "$url" "$binary" || fail 4 "cannot download $url"
  got=$(sha256 "$binary")
  [ "$got" = "$pin" ] || fail 2 "the binary at $url has SHA-256 $got, not $pin; refusing to run it"
  what="the binary at $url"
else
  if [ -z "$target" ]; then
    case "$(uname -s)/$(uname -m)" in
      Linux/x86_64 | Linux/amd64) target=x86_64-unknown-linux-musl ;;
      Linux/aarch64 | Linux/arm64) target=aarch64-unknown-linux-musl ;;
      *) fail 4 "there is no release binary for $(uname -s) $(uname -m); build from source: cargo install --locked --git https://github.com/$repo drover" ;;
    esac
  fi
  asset="drover-$target"
  name="${version:-the latest release}"
  if [ -n "${DROVER_RELEASES_URL:-}" ]; then
    base="$DROVER_RELEASES_URL/${version:-latest}"
  elif [ -n "$version" ]; then
    base="https://github.com/$repo/releases/download/$version"
  else
    base="https://github.com/$repo/releases/latest/download"
  fi
  fetch "$base/SHA256SUMS" "$sums" || fail 4 "no SHA256SUMS for $name at $base"
  fetch "$base/$asset" "$binary" || fail 4 "no release binary $asset for $name at $base"
  want=$(awk -v f="$asset" '$2 == f || $2 == "*" f { print tolower($1) }' "$sums")
  [ -n "$want" ] || fail 2 "SHA256SUMS of $name lists no $asset"
  got=$(sha256 "$binary")
  [ "$got" = "$want" ] || fail 2 "$asset of $name has SHA-256 $got, but its SHA256SUMS says $want; refusing to run it"
  if [ -n "$pin" ] && [ "$got" != "$pin" ]; then
    fail 2 "$asset of $name has SHA-256 $got, not the pinned SHA-256 $pin (--sha256, the Action's binary-sha256); refusing to run it"
  fi
  what="$asset of $name"
fi

chmod 0755 "$binary"
mv -f "$binary" "$to/drover"
say "installed $what (SHA-256 $got) as $to/drover"
case ":${PATH:-}:" in
  *":$to:"*) ;;
  *) say "$to is not on your PATH; add it: export PATH=\"$to:\$PATH\"" ;;
esac
