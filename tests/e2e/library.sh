#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# libevrdma as a library: the shared object exports exactly the functions
# the public headers declare (nothing of evr__*, nothing of the programs);
# `make install DESTDIR=...` lays out programs, library, headers, evrdma.pc
# and man pages under the prefix; and a program built against the
# installed copy with `pkg-config --cflags --libs evrdma` (shared, and
# static with --static) runs.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

B=${EVR_BUILDDIR:-}
S=${EVR_SRCDIR:-}
CC=${CC:-cc}
if [ -z "$B" ] || [ -z "$S" ] || [ ! -d "$B/.libs" ]; then
	echo "$E2E_NAME: EVR_BUILDDIR / EVR_SRCDIR are not set" >&2
	exit 99
fi
for t in nm pkg-config make; do
	command -v "$t" >/dev/null || e2e_skip_all "$t is not installed"
done
T=$E2E_TMP
SO=$B/.libs/libevrdma.so
[ -e "$SO" ] || e2e_skip_all "no shared library was built (--disable-shared)"

# ---- the exported symbols are the public API
nm -D --defined-only "$SO" | awk '$2 ~ /^[TtWi]$/ { sub(/@.*/, "", $3); print $3 }' |
	sort -u >"$T/exported"
# What the headers declare, comments and macros gone: an identifier
# evr_<letter>... directly followed by "(" is a function declaration
# (a typedef'd function pointer reads "(*evr_x_fn)(", so it is not).
printf '#include <evrdma/loop.h>\n#include <evrdma/stream.h>\n#include <evrdma/mcast.h>\n#include <evrdma/hostcheck.h>\n#include <evrdma/version.h>\n' |
	$CC -E -P -I"$B/include" -I"$S/include" - 2>"$T/cpp.err" |
	grep -oE '\bevr_[a-z][a-z0-9_]*[[:space:]]*\(' | sed 's/[[:space:]]*($//' |
	sort -u >"$T/declared"
if [ "$(wc -l <"$T/declared")" -ge 10 ] && diff -u "$T/declared" "$T/exported" >"$T/sym.diff"; then
	ok "libevrdma.so exports exactly the $(wc -l <"$T/declared") functions the headers declare"
else
	not_ok "libevrdma.so exports exactly what the headers declare" \
		"$(head -20 "$T/sym.diff")"
fi
assert_eq "no evr__ internal is exported" 0 \
	"$(nm -D --defined-only "$SO" | grep -c ' evr__')"
assert_match "the exports carry a version node" ' EVRDMA_1$' \
	<(nm -D --defined-only "$SO")

# ---- what the engine may not do, as far as its imports tell: it never
# exits or aborts, never touches signal dispositions or masks, never adds
# a signal watcher, never creates libev's default loop, never prints
nm -D --undefined-only "$SO" | awk '{ sub(/@.*/, "", $2); print $2 }' |
	sort -u >"$T/imported"
BAD=$(grep -xE 'exit|_exit|_Exit|abort|signal|sigaction|sigprocmask|pthread_sigmask|ev_signal_start|ev_default_loop|ev_default_loop_init|printf|fprintf|vfprintf|puts|fputs|putchar|perror|fwrite|__printf_chk|__fprintf_chk|__vfprintf_chk' "$T/imported" | tr '\n' ' ')
assert_eq "libevrdma imports no exit/abort/signal/print function" "" "$BAD"

# ---- the programs do not need the shared library
for p in rstream mckey; do
	if head -c 4 "$B/$p" | grep -q 'ELF' && ! ldd "$B/$p" | grep -q libevrdma; then
		ok "$p is an ELF executable without libevrdma.so"
	else
		not_ok "$p is an ELF executable without libevrdma.so" "$(file "$B/$p")"
	fi
done

# ---- make install
D=$T/dest
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$B" install DESTDIR="$D" \
	>"$T/install.out" 2>&1
assert_exit "make install DESTDIR=..." 0 "$?" "$T/install.out"
PC=$(find "$D" -name evrdma.pc | head -1)
if [ -n "$PC" ]; then
	ok "evrdma.pc is installed (${PC#"$D"})"
	PCDIR=$(dirname "$PC")
	LIBDIR=$(dirname "$PCDIR")
	PREFIX=${LIBDIR%/lib*}
	for f in bin/rstream bin/mckey include/evrdma/loop.h include/evrdma/stream.h \
		 include/evrdma/mcast.h include/evrdma/hostcheck.h \
		 include/evrdma/transport.h include/evrdma/version.h \
		 share/man/man1/rstream.1 share/man/man1/mckey.1 \
		 share/man/man3/evrdma.3 share/man/man3/evr_stream_new.3 \
		 share/man/man3/evr_mcast_new.3 share/man/man3/evr_loop_new.3 \
		 share/man/man3/evr_stream_cancel.3 share/man/man3/evr_mcast_free.3; do
		if [ -e "$PREFIX/$f" ]; then ok "installed: $f"; else not_ok "installed: $f"; fi
	done
	for f in libevrdma.so libevrdma.a; do
		if [ -e "$LIBDIR/$f" ]; then ok "installed: ${LIBDIR#"$PREFIX"/}/$f"; else not_ok "installed: lib/$f"; fi
	done
	run_cmd ver 10 "$PREFIX/bin/rstream" --version
	assert_match "the installed rstream runs" '^rstream \(evrdma\) ' "$T/ver.out"

	export PKG_CONFIG_PATH=$PCDIR PKG_CONFIG_SYSROOT_DIR=$D
	unset PKG_CONFIG_LIBDIR
	CFL=$(pkg-config --cflags evrdma 2>"$T/pc.err")
	LIBS=$(pkg-config --libs evrdma 2>>"$T/pc.err")
	SLIBS=$(pkg-config --static --libs evrdma 2>>"$T/pc.err")
	assert_match "pkg-config --libs names -levrdma" '(^| )-levrdma( |$)' <(echo "$LIBS")
	assert_match "pkg-config --static --libs adds rdmacm, ibverbs and ev" \
		'-lrdmacm.*-libverbs|-libverbs.*-lrdmacm' <(echo "$SLIBS")
	assert_match "pkg-config --static --libs adds -lev" '(^| )-lev( |$)' <(echo "$SLIBS")

	# The example, against the installed headers and shared library.  It
	# uses libev itself, which it links on its own.
	# shellcheck disable=SC2086
	$CC ${EVR_SAN_FLAGS:-} -pthread -Wall -Werror -o "$T/embed-shared" "$S/examples/embed.c" $CFL $LIBS \
		-Wl,-rpath,"$LIBDIR" ${LIBEV_LIBS:--lev} >"$T/cc1.out" 2>&1
	assert_exit "the example builds with pkg-config --cflags --libs evrdma" 0 "$?" "$T/cc1.out"
	if [ -x "$T/embed-shared" ]; then
		assert_match "it runs with the installed libevrdma.so" \
			"libevrdma\\.so\\.1 => $LIBDIR/" <(ldd "$T/embed-shared")
		P=$(e2e_port)
		run_cmd run1 120 "$T/embed-shared" -p "$P" -q -G 10000 -B 5000
		assert_exit "the example, built against the install, passes" 0 "$RC" "$T/run1.out"
	fi
	# Static: the archive, then what --static says it needs.
	# shellcheck disable=SC2086
	$CC ${EVR_SAN_FLAGS:-} -pthread -Wall -Werror -o "$T/embed-static" "$S/examples/embed.c" $CFL \
		"$LIBDIR/libevrdma.a" $(echo "$SLIBS" | sed 's/-levrdma//') \
		${LIBEV_LIBS:--lev} >"$T/cc2.out" 2>&1
	assert_exit "the example links with libevrdma.a and pkg-config --static" 0 "$?" "$T/cc2.out"
	if [ -x "$T/embed-static" ]; then
		assert_no_match "the static build needs no libevrdma.so" libevrdma <(ldd "$T/embed-static")
		P=$(e2e_port)
		run_cmd run2 120 "$T/embed-static" -p "$P" -q -G 10000 -B 5000
		assert_exit "the statically linked example passes" 0 "$RC" "$T/run2.out"
	fi
	# The documentation's own examples (doc/library.md's and evrdma(3)'s
	# EXAMPLE), as written: built against the install, run
	# against a server on 127.0.0.1:7471 (the default port they use),
	# inside a network namespace of our own so that port is free.
	awk '/^```c$/ { on = 1; next } /^```$/ { on = 0 } on' "$S/doc/library.md" \
		>"$T/doc-example.c"
	sed -n '/^\.SH EXAMPLE/,/^\.fi/p' "$S/man/evrdma.3" |
		sed -n '/^\.nf/,/^\.fi/p' | sed -e '/^\.[a-z]/d' \
		-e 's/\\e/\\/g' -e 's/\\-/-/g' >"$T/man-example.c"
	NSX=evlib-$$
	if [ "$(id -u)" = 0 ] && ip netns add "$NSX" 2>/dev/null; then
		trap 'ip netns del "$NSX" 2>/dev/null; e2e_cleanup' EXIT
		ip -n "$NSX" link set lo up
		# the server is not what is tested here: under valgrind, the
		# real program (memcheck runs it in every other script)
		bg_start docsrv 300 ip netns exec "$NSX" "${VG_REAL_RSTREAM:-$RSTREAM}" \
			-T s -T a -b 127.0.0.1
		for ex in doc man; do
			# shellcheck disable=SC2086
			$CC ${EVR_SAN_FLAGS:-} -Wall -Werror -o "$T/$ex-example" \
				"$T/$ex-example.c" $CFL $LIBS -Wl,-rpath,"$LIBDIR" \
				${LIBEV_LIBS:--lev} >"$T/cc-$ex.out" 2>&1
			assert_exit "the $ex's C example builds as written" 0 "$?" "$T/cc-$ex.out"
			[ -x "$T/$ex-example" ] || continue
			run_cmd "$ex-run" 120 ip netns exec "$NSX" "$T/$ex-example"
			assert_exit "the $ex's C example runs: exit 0" 0 "$RC" "$T/$ex-run.err"
			assert_lines "the $ex's C example: a line per test of the default run" 8 \
				"$T/$ex-run.out" '^[0-9a-z]+_(lat|bw):? [0-9.]+ ms$'
		done
		assert_lines "the man page's example: done() with status 0" 1 \
			"$T/man-run.out" '^done: 0$'
		assert_empty "the doc's C example: nothing on stderr" "$T/doc-run.err"
		bg_stop docsrv
		# no server: the doc's example says why in its done()
		if [ -x "$T/doc-example" ]; then
			run_cmd doc-noserver 30 ip netns exec "$NSX" "$T/doc-example"
			assert_lines "the doc's C example without a server: one line, the failure" 1 \
				"$T/doc-noserver.err" '^host: 127\.0\.0\.1:7471: connect: Connection refused$'
			assert_empty "... and no result" "$T/doc-noserver.out"
		fi
		ip netns del "$NSX" 2>/dev/null
		trap e2e_cleanup EXIT
	else
		skip "the documentation's C examples: need root for a network namespace"
	fi
else
	not_ok "evrdma.pc is installed" "$(tail -5 "$T/install.out")"
fi

e2e_done
