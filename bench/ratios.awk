# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Per-row medians and ratios of rstream result tables.  Input: files named
# .../up.N (upstream, round N) and .../ev.N (evrdma), each holding
# rstream's table (rows: name bytes xfers iters total time Gb/sec
# usec/xfer).  Output: one markdown table, rows in first-seen order.
#   awk -f bench/ratios.awk DIR/up.* DIR/ev.*
# usec ratio = evrdma / upstream (below 1: evrdma faster);
# Gb/s ratio = evrdma / upstream (above 1: evrdma faster).
# best ratio = the same for each side's best round (least usec/xfer): on a
# shared, noisy machine the best round is the least disturbed one.
function median(arr, n,   i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && arr[j-1] > arr[j]; j--) {
		t = arr[j]; arr[j] = arr[j-1]; arr[j-1] = t }
	return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
}
FNR == 1 { np = split(FILENAME, p, "/"); split(p[np], q, "."); who = q[1] }
$1 != "name" && NF == 8 && $8 ~ /^[0-9.]+$/ {
	k = who SUBSEP $1
	if (!($1 in seen)) { seen[$1] = 1; order[++nrows] = $1 }
	n[k]++; gb[k, n[k]] = $7; us[k, n[k]] = $8
}
END {
	printf "| test | upstream usec/xfer | evrdma usec/xfer | usec ratio | upstream Gb/s | evrdma Gb/s | Gb/s ratio | best usec ratio | rounds |\n"
	printf "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
	for (i = 1; i <= nrows; i++) {
		t = order[i]
		for (w = 0; w < 2; w++) {
			who = w ? "ev" : "up"; k = who SUBSEP t; m = n[k]
			for (j = 1; j <= m; j++) { a[j] = us[k, j]; b[j] = gb[k, j] }
			mu[who] = m ? median(a, m) : 0
			bu[who] = m ? a[1] : 0
			for (j = 1; j <= m; j++) a[j] = b[j]
			mg[who] = m ? median(a, m) : 0
			cnt[who] = m
		}
		printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %d/%d |\n", t,
			mu["up"], mu["ev"], mu["up"] ? mu["ev"] / mu["up"] : 0,
			mg["up"], mg["ev"], mg["up"] ? mg["ev"] / mg["up"] : 0,
			bu["up"] ? bu["ev"] / bu["up"] : 0, cnt["up"], cnt["ev"]
	}
}
