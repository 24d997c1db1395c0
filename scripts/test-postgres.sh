#!/usr/bin/env bash
# Starts a throwaway PostgreSQL for the tests, on loopback, and prints the
# URL the tests read from GATEHOUSE_TEST_POSTGRES. Installs Debian's
# postgresql package when it is missing. initdb refuses root, so the
# cluster runs as the postgres user (created by the package).
#   scripts/test-postgres.sh start <dir>   start (or reuse) a cluster in <dir>, print its URL
#   scripts/test-postgres.sh stop <dir>    stop it
set -euo pipefail
cmd=${1:?start|stop}
dir=${2:?data directory}

if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
bindir=
for d in /usr/lib/postgresql/*/bin; do
	[ -x "$d/initdb" ] && bindir=$d
done
if [ -z "$bindir" ]; then
	$SUDO apt-get update -q >&2
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && bindir=$d
	done
fi

as_pg() {
	if [ "$(id -un)" = postgres ]; then "$@"; elif [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi
}

case $cmd in
start)
	mkdir -p "$dir"
	chown postgres "$dir" 2>/dev/null || $SUDO chown postgres "$dir"
	port_file=$dir/port
	if [ -f "$dir/data/postmaster.pid" ] && as_pg "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
		echo "postgres://postgres@127.0.0.1:$(cat "$port_file")/postgres?sslmode=disable"
		exit 0
	fi
	if [ ! -f "$dir/data/PG_VERSION" ]; then
		as_pg "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >&2
	fi
	# A free loopback port, checked before the server takes it.
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	echo "$port" | as_pg tee "$port_file" >/dev/null
	as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/data/server.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200 -c fsync=off" start >&2
	echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
	;;
stop)
	if [ -f "$dir/data/postmaster.pid" ]; then
		as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
	fi
	;;
*)
	echo "usage: $0 start|stop <dir>" >&2
	exit 2
	;;
esac
