# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Per-row medians and ratios of rstream result tables.  Input: files named
# .../up.N (upstream, round N) and .../ev.N (evrdma), each holding
# rstream's table (rows: name bytes xfers iters total time Gb/sec
# usec/xfer).  Output: one markdown table, rows in first-seen order.
#   awk -f bench/ratios.awk DIR/up.* DIR/ev.*
# usec ratio = evrdma / upstream (below 1: evrdma faster), of each side's
# median; Gb/s likewise (above 1: evrdma faster).
# Paired: up.N and ev.N ran back to back in round N, so the machine's
# drift between rounds (large on a shared host under emulation) cancels
# in each round's ratio ev.N / up.N.  "paired" is the median of those
# ratios with their range; "ev faster" counts the rounds evrdma won.
# verdict: a one-sided sign test over the rounds: "slower" (or "faster")
# when evrdma lost (won) so many rounds that a coin would do so with
# probability below 5%; otherwise "par" (no difference this run can see),
# or "-" with fewer than five rounds (no verdict is possible then).
function median(arr, n,   i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && arr[j-1] > arr[j]; j--) {
		t = arr[j]; arr[j] = arr[j-1]; arr[j-1] = t }
	return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
}
# P(X >= k) for X ~ Binomial(n, 1/2)
function tail(k, n,   i, c, s) {
	s = 0; c = 1
	for (i = 0; i <= n; i++) {
		if (i >= k) s += c
		c = c * (n - i) / (i + 1)
	}
	return s / 2 ^ n
}
FNR == 1 { np = split(FILENAME, p, "/"); split(p[np], q, "."); who = q[1]; rnd = q[2] }
$1 != "name" && NF == 8 && $8 ~ /^[0-9.]+$/ {
	k = who SUBSEP $1
	if (!($1 in seen)) { seen[$1] = 1; order[++nrows] = $1 }
	n[k]++; gb[k, n[k]] = $7; us[k, n[k]] = $8
	byround[k, rnd] = $8; rounds[rnd] = 1
}
END {
	printf "| test | upstream usec/xfer | evrdma usec/xfer | usec ratio | paired ratio | paired range | ev faster | verdict | upstream Gb/s | evrdma Gb/s | Gb/s ratio | rounds |\n"
	printf "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|\n"
	for (i = 1; i <= nrows; i++) {
		t = order[i]
		for (w = 0; w < 2; w++) {
			who = w ? "ev" : "up"; k = who SUBSEP t; m = n[k]
			for (j = 1; j <= m; j++) { a[j] = us[k, j]; b[j] = gb[k, j] }
			mu[who] = m ? median(a, m) : 0
			for (j = 1; j <= m; j++) a[j] = b[j]
			mg[who] = m ? median(a, m) : 0
			cnt[who] = m
		}
		npair = 0; won = 0; lost = 0; lo = 0; hi = 0
		for (r in rounds) {
			ke = "ev" SUBSEP t; ku = "up" SUBSEP t
			if (!((ke, r) in byround) || !((ku, r) in byround) ||
			    byround[ku, r] <= 0)
				continue
			x = byround[ke, r] / byround[ku, r]
			pr[++npair] = x
			won += x < 1; lost += x > 1
			if (npair == 1 || x < lo) lo = x
			if (npair == 1 || x > hi) hi = x
		}
		verdict = npair < 5 ? "-" : "par"   # fewer rounds prove nothing
		if (npair && tail(lost, npair) < 0.05) verdict = "slower"
		else if (npair && tail(won, npair) < 0.05) verdict = "faster"
		printf "| %s | %.2f | %.2f | %.2f | %s | %s | %d/%d | %s | %.2f | %.2f | %.2f | %d/%d |\n", t,
			mu["up"], mu["ev"], mu["up"] ? mu["ev"] / mu["up"] : 0,
			npair ? sprintf("%.2f", median(pr, npair)) : "-",
			npair ? sprintf("%.2f-%.2f", lo, hi) : "-", won, npair, verdict,
			mg["up"], mg["ev"], mg["up"] ? mg["ev"] / mg["up"] : 0,
			cnt["up"], cnt["ev"]
	}
}
