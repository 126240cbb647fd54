# SPDX-License-Identifier: MIT
# lib.sh - what the shell tests share.  Source it, then make the temp dir:
#
#     . "$(dirname "$0")/../lib/lib.sh"
#     lib_init NAME [BASE]
#
# lib_init NAME [BASE]: T, a fresh directory BASE/railmon-test-NAME.XXXXXX
#   (BASE $TMPDIR or /tmp by default, /var/tmp for a disk; in the CAN VM
#   TMPDIR is the writable scratch dir), and pids=(): every peer
#   and railmon the test starts goes there and is stopped on every exit
#   path by the EXIT trap, which then removes $T even where the test took
#   its permissions away (KEEP=1 keeps it).  TERM
#   and INT (meson's timeout, ^C) exit 143 through the same trap.
# sleep_s SECONDS: sleep without starting a process.
# wait_for SECONDS CMD...: run CMD every 0.1 s until it succeeds, at most
#   SECONDS; status 1 if it never did.  CMD may call the test's fail().
# has_lines FILE PATTERN [COUNT]: PATTERN (grep's basic regex) is on COUNT
#   (1) lines of FILE.
# alive PID: PID has not exited (a zombie counts as exited); gone PID: it has.
# stop_pid PID [GRACE]: SIGTERM, SIGKILL if it is still there after GRACE
#   seconds (5), reap.
# start_peer CMD...: CMD in the background, killed if this script dies
#   first, however it dies (setpriv --pdeathsig KILL); its pid in LIB_PID
#   and in pids.  Redirect as for any command: start_peer x 2>>"$T/x.log".
# lib_tmpfs SIZE: a tmpfs of SIZE mounted on M=$T/fs, unmounted at exit.
#   Needs root: without it the test FAILS (calls fail()), never skips.
# free_port: a loopback TCP port nobody listens on now.
# port_open PORT: something accepts connections on 127.0.0.1:PORT.
# shellcheck shell=bash

PY=/usr/bin/python3

lib_init() {
	T=$(mktemp -d "${2:-${TMPDIR:-/tmp}}/railmon-test-$1.XXXXXX")
	pids=()
	lib_mounts=()
	trap lib_cleanup EXIT
	trap 'exit 143' TERM INT
	# read's timeout on a pipe nobody writes to: a sleep with no process
	exec {lib_sleep_fd}<> <(:)
}

lib_cleanup() {
	local p m
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do stop_pid "$p"; done
	for m in "${lib_mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done
	[ -n "${KEEP:-}" ] || { chmod -R u+rwX "$T" 2>/dev/null || true; rm -rf "$T"; }
}

sleep_s() { read -r -t "$1" -u "$lib_sleep_fd" || true; }

wait_for() {
	local end=$(($(date +%s%N) + ${1%.*} * 1000000000)); shift
	until "$@" 2>/dev/null; do
		[ "$(date +%s%N)" -lt $end ] || return 1
		sleep_s 0.1
	done
}

has_lines() {
	local c
	c=$(grep -c -- "$2" "$1" 2>/dev/null || true)
	[ "${c:-0}" -ge "${3:-1}" ]
}

alive() { local s; s=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) && [ "$s" != Z ]; }
gone() { ! alive "$1"; }

stop_pid() {
	local i
	kill -TERM "$1" 2>/dev/null || true
	for ((i = 0; i < ${2:-5} * 10; i++)); do alive "$1" || break; sleep_s 0.1; done
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

start_peer() {
	setpriv --pdeathsig KILL -- "$@" &
	LIB_PID=$!
	pids+=("$LIB_PID")
}

lib_tmpfs() {
	M=$T/fs
	mkdir "$M"
	mount -t tmpfs -o "size=$1" tmpfs "$M" || fail "cannot mount a $1 tmpfs on $M: this test needs root"
	lib_mounts+=("$M")
}

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port_open() { "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.5)"; }
