#!/usr/bin/env bash
# Runs every test of Gatehouse, installing what the tests need first.
#   ./test.sh            format, vet, staticcheck, unit tests under -race, integration tests
# Environment: SKIP_INSTALL=1 skips the installation steps (offline reruns).
# PostgreSQL (Debian's package, installed when missing) is started on
# loopback for the tests that need it and stopped at the end.
set -euo pipefail
cd "$(dirname "$0")"

step() { printf '\n==> %s\n' "$*"; }

export PATH="$(go env GOPATH)/bin:$PATH"

if [ "${SKIP_INSTALL:-}" != 1 ]; then
	step "installing test dependencies"
	# Node.js and npm run the openid-client interoperability test; Debian's
	# Chromium runs the browser flows' headless-browser tests; gcc is the
	# race detector's (cgo); python3 picks PostgreSQL's free port;
	# systemd-analyze checks the service unit under dist/.
	missing=
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then missing="$missing nodejs npm"; fi
	if ! command -v chromium >/dev/null; then missing="$missing chromium"; fi
	if ! command -v gcc >/dev/null; then missing="$missing gcc libc6-dev"; fi
	if ! command -v python3 >/dev/null; then missing="$missing python3"; fi
	if ! command -v systemd-analyze >/dev/null; then missing="$missing systemd"; fi
	if [ -n "$missing" ]; then
		if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
		$SUDO apt-get update -q
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
	fi
	(cd integration/node && npm ci --no-audit --no-fund --loglevel=error)
	if ! command -v staticcheck >/dev/null; then
		go install honnef.co/go/tools/cmd/staticcheck@v0.7.0
	fi
	go mod download
fi

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './integration/node/*'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go vet"
go vet ./...

step "staticcheck"
staticcheck ./...

step "starting PostgreSQL (loopback, throwaway)"
pgdir=$(mktemp -d /tmp/gatehouse-pg.XXXXXX)
trap 'scripts/test-postgres.sh stop "$pgdir" >/dev/null 2>&1 || true; rm -rf "$pgdir"' EXIT
GATEHOUSE_TEST_POSTGRES=$(scripts/test-postgres.sh start "$pgdir" 2>"$pgdir.log") || { cat "$pgdir.log"; exit 1; }
export GATEHOUSE_TEST_POSTGRES
rm -f "$pgdir.log"

step "unit tests (-race)"
go test -race -count=1 $(go list ./... | grep -v '/integration$')

step "integration tests"
# The integration tests wait more than they compute (processes starting,
# lapses, polls): four at a time (go test's default is one per CPU) halves
# the step on two cores without slowing any of them.
go test -count=1 -timeout 20m -parallel 4 ./integration/...
