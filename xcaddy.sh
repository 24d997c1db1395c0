#!/usr/bin/env bash
# Builds a gatehouse binary with xcaddy: Caddy v2.11.9 with its standard
# modules and this checkout's modules. Run it from anywhere; the binary lands
# in the repository root (or at the path given as the first argument).
#
#	./xcaddy.sh [output]
#
# xcaddy is installed first when it is missing. (The module proxy refuses
# `go install ...@version` for xcaddy's module, so it is built from a
# throwaway module instead.)
set -euo pipefail

CADDY_VERSION=v2.11.9
XCADDY_VERSION=v0.4.5

root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
output="${1:-$root/gatehouse}"
case "$output" in
/*) ;;
*) output="$PWD/$output" ;;
esac

gobin="$(go env GOBIN)"
[ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
xcaddy="$(command -v xcaddy || true)"
if [ -z "$xcaddy" ]; then
	xcaddy="$gobin/xcaddy"
fi
if [ ! -x "$xcaddy" ]; then
	echo "installing xcaddy $XCADDY_VERSION into $gobin" >&2
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' EXIT
	(
		cd "$tmp"
		go mod init x >/dev/null 2>&1
		go get "github.com/caddyserver/xcaddy/cmd@$XCADDY_VERSION"
		mkdir -p "$gobin"
		go build -o "$gobin/xcaddy" github.com/caddyserver/xcaddy/cmd/xcaddy
	)
fi

# The plugin is pinned to a version the replacement by this checkout serves,
# which `list-modules --versions` and `build-info` then show: the checkout's
# tag when HEAD has one (v0.3.0), else GATEHOUSE_VERSION, else the zero
# pseudo-version. Without a version `go get` asks the module proxy for the
# latest one, and fails where the proxy answers other than 404.
cd "$root"
version="${GATEHOUSE_VERSION:-$(git describe --tags --exact-match 2>/dev/null || true)}"
version="${version:-v0.0.0-00010101000000-000000000000}"
"$xcaddy" build "$CADDY_VERSION" --output "$output" \
	--with "github.com/gatehouse/gatehouse@$version=."
echo "built $output" >&2
