#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Each file changes only the state it owns (issue 39): the RDMA layer's
# struct rconn (rdma_int.h) and the session layer's struct evr_sess
# (session.h) have their fields in groups by owner, and no file of
# src/stream/ assigns a field of another's group (scripts/owners.sh).  First the script itself, on a struct and files
# made here: one write outside its owner, found; the same file without
# it, clean.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

O=$E2E_SRCDIR/scripts/owners.sh
T=$E2E_TMP
command -v perl >/dev/null || e2e_skip_all "perl is not installed"

cat >"$T/s.h" <<'H'
struct s {
	int base;
	/* owner: a.c (the a side) */
	int x, *y;
	char name[16];
	/* owner: b.c */
	unsigned long n;       /* a count */
};
H
printf 'void f(struct s *rc) { rc->x = 1; rc->y = 0; rc->base = 3; }\nvoid g(struct s *rc) { if (rc->n == 2) return; }\n' >"$T/a.c"
printf 'void h(struct s *rc) { rc->n++; rc->name[0] = 0; }\n' >"$T/b.c"
"$O" "$T/s.h" s "$T/a.c" "$T/b.c" >"$T/self.out" 2>&1
rc=$?
assert_exit "self-test: a write outside its owner fails" 1 "$rc" "$T/self.out"
assert_match "self-test: ... named with its owner" '/b\.c:1: name \(owner: a\.c\)$' "$T/self.out"
assert_match "self-test: 4 fields in 2 groups, 4 writes (base not counted, == not a write), 1 outside" \
	'^owners: struct s: 4 fields in 2 groups, 4 writes in 2 files, 1 outside their owner$' "$T/self.out"
printf 'void h(struct s *rc) { --rc->n; }\n' >"$T/b.c"
"$O" "$T/s.h" s "$T/a.c" "$T/b.c" >"$T/self2.out" 2>&1
assert_exit "self-test: each field written by its owner: exit 0" 0 "$?" "$T/self2.out"
printf 'void h(struct s *q) { q->x = 2; }\n' >"$T/b.c"
"$O" -p q "$T/s.h" s "$T/a.c" "$T/b.c" >"$T/self3.out" 2>&1
assert_exit "self-test: -p q: a write through q outside its owner fails" 1 "$?" "$T/self3.out"

# the tree
R=$E2E_SRCDIR/src/stream/rdma
"$O" "$R/rdma_int.h" rconn "$R"/*.c >"$T/tree.out" 2>&1
rc=$?
sed 's/^/# /' "$T/tree.out"
assert_exit "src/stream/rdma/: each field of struct rconn changed only by its owner" 0 "$rc" "$T/tree.out"
assert_match "... all five groups there" ' in 5 groups, ' "$T/tree.out"
S=$E2E_SRCDIR/src/stream
"$O" -p s "$S/session/session.h" evr_sess "$S"/session/*.c "$S"/*.c >"$T/sess.out" 2>&1
rc=$?
sed 's/^/# /' "$T/sess.out"
assert_exit "src/stream/: each field of struct evr_sess changed only by its owner (the machine, the negotiation, the driver)" 0 "$rc" "$T/sess.out"
assert_match "... all three groups there" ' in 3 groups, ' "$T/sess.out"
e2e_done
