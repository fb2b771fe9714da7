#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/with-redis.sh PROGRAM [ARG...] — run PROGRAM ARG... 127.0.0.1 PORT
# against a throwaway redis-server (HILOCK_REDIS_SERVER, or redis-server
# from PATH) on a free loopback port, with no persistence, in a scratch
# directory; stop it afterwards (by its pid) and exit with PROGRAM's
# status. For the examples, which take host and port as their last
# arguments. Also sourced by tests/install/run.sh for with_redis.
set -euo pipefail

# with_redis PROGRAM [ARG...] — as the script.
with_redis() {
	local server=${HILOCK_REDIS_SERVER:-redis-server} dir port pid rc=0 i
	dir=$(mktemp -d "${TMPDIR:-/tmp}/hilock-redis-XXXXXX")
	for i in 1 2 3; do
		port=$(python3 -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		"$server" --bind 127.0.0.1 --port "$port" --save '' \
			--appendonly no --dir "$dir" --daemonize no \
			>"$dir/redis.log" 2>&1 &
		pid=$!
		if with_redis_ready "$port" "$pid"; then
			break
		fi
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		pid=
	done
	if [[ -z $pid ]]; then
		echo "with-redis: $server did not start:" >&2
		cat "$dir/redis.log" >&2
		rm -rf "$dir"
		return 1
	fi
	"$@" 127.0.0.1 "$port" || rc=$?
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -rf "$dir"
	return "$rc"
}

# with_redis_ready PORT PID — true once the server on PORT answers PING
# (at most 10 s), false when it exits first.
with_redis_ready() {
	local port=$1 pid=$2 i line
	for ((i = 0; i < 200; i++)); do
		kill -0 "$pid" 2>/dev/null || return 1
		if { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
			printf 'PING\r\n' >&3
			line=
			read -r -t 1 line <&3 || true
			exec 3>&-
			[[ $line == +PONG* ]] && return 0
		fi
		sleep 0.05
	done
	return 1
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	if (($# == 0)); then
		echo "usage: $0 PROGRAM [ARG...]" >&2
		exit 2
	fi
	with_redis "$@"
fi
