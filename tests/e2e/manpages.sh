#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The man pages, checked so that their defects cannot come back:
#   - mandoc -Tlint finds no warning or error in any page (style notes,
#     such as a long source line, are not defects);
#   - every .so alias points at a page that exists;
#   - every option a program's --help lists has a tagged entry of its own
#     in its page (a .TP head naming it), and every tagged entry has text.
# mandoc is installed by scripts/deps.sh.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

MAN=$E2E_SRCDIR/man
T=$E2E_TMP

if ! command -v mandoc >/dev/null; then
	not_ok "mandoc is installed (scripts/deps.sh)"
	e2e_done
fi

for f in "$MAN"/*.[138]; do
	name=${f##*/}
	target=$(sed -n '2s/^\.so man[0-9]\///p' "$f")
	if [ -n "$target" ]; then
		if [ -f "$MAN/$target" ]; then
			ok "$name: .so $target exists"
		else
			not_ok "$name: .so $target exists"
		fi
		continue
	fi
	mandoc -Tlint -W warning "$f" >"$T/lint.out" 2>&1
	if [ -s "$T/lint.out" ]; then
		not_ok "$name: mandoc -Tlint -W warning is clean" "$(head -5 "$T/lint.out" | tr '\n' '|')"
	else
		ok "$name: mandoc -Tlint -W warning is clean"
	fi
	# words an alternating macro ran together (".BR _total ).  Per
	# probe" renders "_total).Perprobe"): a sentence's end glued to the
	# next one's first word
	mandoc -Tascii "$f" 2>/dev/null | col -b |
		grep -nE '[a-z0-9_][).,;:]+[A-Z][a-z]' | grep -v 'e\.g\.\|i\.e\.' >"$T/glued.out"
	if [ -s "$T/glued.out" ]; then
		not_ok "$name: no words run together" "$(head -3 "$T/glued.out" | tr '\n' '|')"
	else
		ok "$name: no words run together"
	fi
	# every .TP entry: a head line, then text before the next entry
	awk '
		/^\.TP/ { if (tp && !body) print "empty entry: " head; tp = 1; head = ""; body = 0; next }
		/^\.(SH|SS|PP|P|LP)( |$)/ { if (tp && head != "" && !body) print "empty entry: " head; tp = 0; next }
		tp && head == "" && !/^\.\\"/ { head = $0; next }
		tp && head != "" && !/^\.(RS|RE|IP)$/ { body = 1 }
		END { if (tp && !body) print "empty entry: " head }
	' "$f" >"$T/empty.out"
	if [ -s "$T/empty.out" ]; then
		not_ok "$name: every tagged entry has text" "$(head -3 "$T/empty.out" | tr '\n' '|')"
	else
		ok "$name: every tagged entry has text"
	fi
done

# rstream(1)'s start record names every option key the option table
# gives it (include/evrdma/stream.h's JSON(...) entries)
keys=$(grep -o 'JSON("[a-z_]*"' "$E2E_SRCDIR/include/evrdma/stream.h" | sed 's/JSON("//; s/"$//')
entry=$(awk '/^\.B start$/ { on = 1; next } on && /^\.TP/ { exit } on' "$MAN/rstream.1")
missing=""
for k in $keys; do
	printf '%s\n' "$entry" | grep -qw -- "$k" || missing="$missing $k"
done
if [ -n "$keys" ] && [ -z "$missing" ]; then
	ok "rstream.1: the start record's entry names all $(echo $keys | wc -w) option keys"
else
	not_ok "rstream.1: the start record's entry names every option key" "missing:${missing:- (no keys found)}"
fi

# The .TP heads of a page, with man's escapes undone: "\-\-json" -> "--json".
heads() { # PAGE
	awk '/^\.TP/ { getline; print }' "$1" |
		sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/^\.[BIR]*[BIR] //' -e 's/"//g'
}

# options_of PROGRAM: every -x and --long option its --help names
options_of() {
	"$1" --help 2>&1 | grep -o -E -- '(^|[[ 	,])--?[a-zA-Z][a-z-]*' |
		sed -E 's/^[[ 	,]//' | sort -u
}

check_options() { # PROGRAM PAGE
	local prog=$1 page=$2 opt missing=""
	heads "$MAN/$page" >"$T/heads.txt"
	for opt in $(options_of "$prog"); do
		grep -q -E -- "(^|[ ,])$(ere_quote "$opt")([ ,=]|$)" "$T/heads.txt" ||
			missing="$missing $opt"
	done
	if [ -z "$missing" ]; then
		ok "$page: every option of --help has an entry of its own"
	else
		not_ok "$page: every option of --help has an entry of its own" "missing:$missing"
	fi
}

# check_synopsis PROGRAM PAGE: the SYNOPSIS shows every option --help
# names, in one of its spellings (a --help line's -c, --connections are
# one option); --help and --version aside, a page's own convention
check_synopsis() {
	local prog=$1 page=$2 line opts opt shown missing=""
	sed -n '/^\.SH SYNOPSIS/,/^\.SH /p' "$MAN/$page" |
		sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' >"$T/syn.txt"
	while IFS= read -r line; do
		# the option column: up to the first run of two blanks
		line=$(printf '%s\n' "$line" | sed -E 's/^[[:space:]]+//; s/(  |	).*//')
		opts=$(printf '%s\n' "$line" | grep -o -E -- '(^|[[ 	,])--?[a-zA-Z][a-z-]*' |
			sed -E 's/^[[ 	,]//')
		[ -n "$opts" ] || continue
		printf '%s\n' "$opts" | grep -q -x -E -- '--help|--version' && continue
		shown=
		for opt in $opts; do
			grep -q -E -- "(^|[][ |])$(ere_quote "$opt")([][ |]|$)" "$T/syn.txt" && shown=1
		done
		[ -n "$shown" ] || missing="$missing $(echo $opts | tr ' ' '/')"
	done < <("$prog" --help 2>&1 | grep -E -- '^[[:space:]]+--?[a-zA-Z]')
	if [ -z "$missing" ]; then
		ok "$page: its SYNOPSIS shows every option of --help"
	else
		not_ok "$page: its SYNOPSIS shows every option of --help" "missing:$missing"
	fi
}

# The page installed names the configuration path the binary uses.
gen=$EVR_BUILDDIR/man-gen/evrdma-probed.8
conf=$("$PROBED" --help | sed -n 's/.*(default \(.*\.conf\)).*/\1/p')
paths=$(grep -o -E '/[^ ,:]*/evrdma-probed\.conf' "$gen" 2>/dev/null | sort -u)
if [ -n "$conf" ] && [ "$paths" = "$conf" ]; then
	ok "evrdma-probed.8 as installed names the binary's default, $conf"
else
	not_ok "evrdma-probed.8 as installed names the binary's default, ${conf:-?}" \
		"the page says: $(echo "$paths" | tr "\n" " ")"
fi

check_options "$RSTREAM" rstream.1
check_options "$MCKEY" mckey.1
check_options "$PROBED" evrdma-probed.8
check_synopsis "$RSTREAM" rstream.1
check_synopsis "$MCKEY" mckey.1
check_synopsis "$PROBED" evrdma-probed.8

e2e_done
