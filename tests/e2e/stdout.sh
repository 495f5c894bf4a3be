#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Standard output that cannot be written, for rstream and mckey, in text
# and with --json: full (/dev/full, ENOSPC), closed (>&-: the program puts
# /dev/null there, so no loop or socket takes descriptor 1, and a write
# fails with EBADF), and a pipe whose reader is gone (EPIPE: SIGPIPE is
# ignored, never a silent 141).  Each is one line on stderr,
# "<prog>: write error on standard output: <reason>", no stale second
# line, the documented status (rstream 5, mckey the write's negative
# errno; a run that failed first keeps its own), and the run stopped at
# once: the progress, error and exit-status paths.  A reader that leaves
# mid-run (| head -n 1) stops a run at its next write.
#
# rstream talks to 127.0.0.1 only; mckey runs --udp in a network namespace
# of this script's own, on its lo (skipped without root).
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

R=$RSTREAM
M=${MCKEY:-}
H=127.0.0.1
T=$E2E_TMP

declare -A REASON=([full]="No space left on device" \
	[closed]="Bad file descriptor" [pipe]="Broken pipe")
# mckey's status: the write's negative errno, modulo 256
declare -A MCSTATUS=([full]=228 [closed]=247 [pipe]=224)
HOWS=(full closed pipe)
if [ "$E2E_VG" = 1 ]; then
	# valgrind opens its log on the lowest free descriptor and leaves it
	# there: the program would find its log at 1, not a closed stdout
	HOWS=(full pipe)
	skip "stdout closed under valgrind: memcheck's log file takes descriptor 1 (the normal and ASan builds test it)"
fi

# out_run NAME HOW SECS CMD...: run CMD (bounded by SECS) with its stdout
# HOW: full, closed, or pipe: a FIFO opened for reading and writing, then
# for writing, and the reading end closed before CMD starts, so the
# reader is gone before any write, whatever the timing.  stderr in
# NAME.err; RC, ELAPSED_MS.
out_run() {
	local name=$1 how=$2 secs=$3 t0 fifo=$T/$1.fifo rd wr
	shift 3
	t0=$(now_ms)
	case $how in
	full)
		timeout -k "$(tscale 3)" "$(tscale "$secs")" "$@" >/dev/full \
			2>"$T/$name.err" </dev/null &
		;;
	closed)
		timeout -k "$(tscale 3)" "$(tscale "$secs")" "$@" >&- \
			2>"$T/$name.err" </dev/null &
		;;
	pipe)
		mkfifo "$fifo"
		exec {rd}<>"$fifo"
		exec {wr}>"$fifo"
		exec {rd}<&-
		timeout -k "$(tscale 3)" "$(tscale "$secs")" "$@" 1>&"$wr" \
			2>"$T/$name.err" </dev/null &
		exec {wr}>&-
		;;
	esac
	E2E_PID['__fg']=$!
	wait "${E2E_PID['__fg']}"
	RC=$?
	unset 'E2E_PID[__fg]'
	ELAPSED_MS=$(( $(now_ms) - t0 ))
}

# head_run NAME SECS CMD...: CMD | head -n 1, the reader taking the first
# line and leaving: CMD's next write, a pause later (--interval, --settle),
# meets a pipe without a reader.  head's line in NAME.out, CMD's stderr in
# NAME.err; RC (CMD's), ELAPSED_MS.
head_run() {
	local name=$1 secs=$2 t0
	shift 2
	t0=$(now_ms)
	( { timeout -k "$(tscale 3)" "$(tscale "$secs")" "$@" \
		2>"$T/$name.err" </dev/null; echo $? >"$T/$name.rc"; } |
		head -n 1 >"$T/$name.out" ) &
	E2E_PID['__fg']=$!
	wait "${E2E_PID['__fg']}"
	unset 'E2E_PID[__fg]'
	RC=$(cat "$T/$name.rc" 2>/dev/null)
	ELAPSED_MS=$(( $(now_ms) - t0 ))
}

# the write error, alone: the whole of stderr is that one line
only_write_error() { # DESC PROG HOW FILE
	assert_eq "$1: the one line on stderr is the write error" \
		"$2: write error on standard output: ${REASON[$3]}" "$(cat "$4")"
}

# at once: well within the run it would have been
at_once() { # DESC
	assert_le "$1: stopped at once (ms)" "$ELAPSED_MS" "$(tscale 5000)"
}

# ---------------------------------------------------------------- rstream

P=$(e2e_port)
DEAD=$(e2e_port) # claimed, and nothing listens there
start_server srv "$P" "$R" -T s -b $H -p "$P"
n=0
for how in "${HOWS[@]}"; do
	for json in "" --json; do
		d="rstream ${json:-(text)} stdout $how"
		# progress: the run never starts (its first write, the
		# header or the start record, failed), so no progress either
		n=$((n + 1))
		# shellcheck disable=SC2086
		out_run "prog$n" "$how" 40 "$R" -T s -s $H -p "$P" -S 64 -C 1 \
			-D 30 --interval 0.1 $json
		assert_exit "$d, --interval: exit 5" 5 "$RC" "$T/prog$n.err"
		only_write_error "$d, --interval" rstream "$how" "$T/prog$n.err"
		at_once "$d, --interval"
		# error: a connection that would be refused is never tried
		# (upstream prints its header before connecting, too)
		# shellcheck disable=SC2086
		out_run "refused$n" "$how" 20 "$R" -T s -s $H -p "$DEAD" -S 64 \
			-C 1 -I 10 $json
		assert_exit "$d, refused port: exit 5" 5 "$RC" "$T/refused$n.err"
		only_write_error "$d, refused port" rstream "$how" \
			"$T/refused$n.err"
		# a command line that fails keeps its status (1); its usage
		# (text: an unknown option) or its error record (--json: a
		# bad value) is lost, and said so after its own line
		if [ -z "$json" ]; then
			bad=(--bogus) said="unrecognized option '--bogus'"
		else
			bad=(-T s -S 0 --json) said="^rstream: .*-S"
		fi
		out_run "usage$n" "$how" 10 "$R" "${bad[@]}"
		assert_exit "$d, ${bad[*]}: exit 1, its own" 1 "$RC" \
			"$T/usage$n.err"
		assert_lines "$d, ${bad[*]}: two lines on stderr" 2 \
			"$T/usage$n.err"
		assert_match "$d, ${bad[*]}: the first says why" "$said" \
			"$T/usage$n.err"
		assert_eq "$d, ${bad[*]}: then the write error" \
			"rstream: write error on standard output: ${REASON[$how]}" \
			"$(tail -n 1 "$T/usage$n.err")"
		# --check on a run that needs nothing of the host: 0 but for
		# the write
		# shellcheck disable=SC2086
		out_run "check$n" "$how" 10 "$R" --check -T s $json
		assert_exit "$d, --check: exit 5" 5 "$RC" "$T/check$n.err"
		only_write_error "$d, --check" rstream "$how" "$T/check$n.err"
	done
done

# The reader leaves mid-run.  --json: after the start record; the first
# progress record (0.2 s in) stops the run.
head_run jmid 40 "$R" -T s -s $H -p "$P" -S 64 -C 1 -D 30 --interval 0.2 \
	--json
assert_exit "rstream --json | head -n 1: exit 5" 5 "$RC" "$T/jmid.err"
only_write_error "rstream --json | head -n 1" rstream pipe "$T/jmid.err"
at_once "rstream --json | head -n 1"
assert_match "rstream --json | head -n 1: the start record went out" \
	'^\{"type":"start",' "$T/jmid.out"
# text: after the header; the result row (the exit-status path) is lost
head_run tmid 20 "$R" -T s -s $H -p "$P" -S 64 -C 1 -D 0.5
assert_exit "rstream | head -n 1: exit 5" 5 "$RC" "$T/tmid.err"
only_write_error "rstream | head -n 1" rstream pipe "$T/tmid.err"
assert_eq "rstream | head -n 1: the header went out" "$E2E_HEADER" \
	"$(cat "$T/tmid.out")"
bg_stop srv

# ------------------------------------------------------------------ mckey

NS=evout-$$
if [ -z "$M" ] || [ ! -x "$M" ]; then
	not_ok "mckey" "MCKEY is not set to an executable mckey"
elif [ "$(id -u)" != 0 ] || ! ip netns add "$NS" 2>/dev/null; then
	skip "mckey with stdout full, closed, a closed pipe: cannot create a network namespace (needs root)"
else
	trap 'ip netns del "$NS" 2>/dev/null; e2e_cleanup' EXIT
	# multicast on the namespace's own lo: nothing leaves it
	X=$(( $$ % 200 + 20 ))
	ADDR=10.$X.9.1
	G=239.79.$X.1
	if ip -n "$NS" link set lo up &&
	   ip -n "$NS" link set lo multicast on &&
	   ip -n "$NS" addr add "$ADDR/24" dev lo &&
	   ip -n "$NS" route add 224.0.0.0/4 dev lo; then
		IN=(ip netns exec "$NS")
		MC=(--udp --udp-port 17003 -b "$ADDR")
		n=0
		for how in "${HOWS[@]}"; do
			st=${MCSTATUS[$how]}
			for json in "" --json; do
				d="mckey ${json:-(text)} stdout $how"
				n=$((n + 1))
				# progress: its first line (or the start
				# record) fails, the receiver stops at once
				# shellcheck disable=SC2086
				out_run "mrx$n" "$how" 40 "${IN[@]}" "$M" "${MC[@]}" \
					-m "$G" --settle 0.2 --deadline 30 $json
				assert_exit "$d, receiver: exit $st" "$st" "$RC" \
					"$T/mrx$n.err"
				only_write_error "$d, receiver" mckey "$how" \
					"$T/mrx$n.err"
				at_once "$d, receiver"
				# --check needs nothing of the host for --udp
				# shellcheck disable=SC2086
				out_run "mck$n" "$how" 10 "$M" --check --udp $json
				assert_exit "$d, --check: exit $st" "$st" "$RC" \
					"$T/mck$n.err"
				only_write_error "$d, --check" mckey "$how" \
					"$T/mck$n.err"
			done
			# error: a group that is not one fails the run, which
			# keeps its status (-22) after its first line is lost
			d="mckey (text) stdout $how"
			out_run "mbad$n" "$how" 10 "${IN[@]}" "$M" "${MC[@]}" \
				-m 10.1.2.3 --settle 0.2
			assert_exit "$d, not a group: exit 234, its own" 234 "$RC" \
				"$T/mbad$n.err"
			assert_lines "$d, not a group: two lines on stderr" 2 \
				"$T/mbad$n.err"
			assert_eq "$d, not a group: the write error first" \
				"mckey: write error on standard output: ${REASON[$how]}" \
				"$(head -n 1 "$T/mbad$n.err")"
			assert_match "$d, not a group: then why it failed" \
				'^mckey: invalid group: 10\.1\.2\.3 is not a multicast address$' \
				"$T/mbad$n.err"
		done
		# the reader leaves mid-run: the line after the settle
		# ("receiving data transfers", the transfer phase) stops it
		for json in "" --json; do
			d="mckey ${json:-(text)} | head -n 1"
			# shellcheck disable=SC2086
			head_run "mmid${json:+j}" 40 "${IN[@]}" "$M" "${MC[@]}" \
				-m "$G" --settle 0.3 --deadline 30 $json
			assert_exit "$d: exit 224" 224 "$RC" "$T/mmid${json:+j}.err"
			only_write_error "$d" mckey pipe "$T/mmid${json:+j}.err"
			at_once "$d"
		done
	else
		not_ok "mckey namespace setup"
	fi
	ip netns del "$NS" 2>/dev/null
fi

e2e_done
