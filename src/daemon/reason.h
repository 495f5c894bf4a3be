/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A list of failure reasons (the "reason" label) carries, in a column,
 * the failure codes each comes from: positive errno values or EVR_E_*
 * codes (include/evrdma/error.h), as a parenthesized list, (0) for none.
 * REASON_CODES() turns that column into a table row; reason_by_code()
 * finds a code's reason in the table: the mapping is the list's, read
 * once, with no switch or name beside it.
 */
#ifndef EVR_PROBED_REASON_H
#define EVR_PROBED_REASON_H

/* codes a reason comes from, at most */
#define REASON_MAXCODES 4
/* (ECONNRESET, EPIPE) -> { ECONNRESET, EPIPE } */
#define REASON__BRACE(...) { __VA_ARGS__ }
#define REASON_CODES(codes) REASON__BRACE codes

/* The reason (a row of codes[n]) whose codes hold -err, or dflt. */
static inline int reason_by_code(const int (*codes)[REASON_MAXCODES], int n,
				 int err, int dflt)
{
	int r, c;

	for (r = 0; r < n; r++)
		for (c = 0; c < REASON_MAXCODES && codes[r][c]; c++)
			if (codes[r][c] == -err)
				return r;
	return dflt;
}

#endif
