#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# owners.sh: does each file change only the state it owns?  (issue 39)
#
# usage: scripts/owners.sh [-p NAMES] HEADER STRUCT FILE...
#
# HEADER declares STRUCT with its fields in groups, each group after a
# comment "/* owner: NAME.c ...": the file that changes those fields.
# Every assignment (=, op=, ++, --) to a field of the struct in FILE...,
# written through a pointer named one of NAMES (a regular expression's
# alternatives, default rc|self|me: the names the RDMA layer gives a
# connection), must be in the field's owner; fields before the first
# group belong to nobody here and are not checked.  A change made
# through the owner's functions, or through a pointer passed to one, is
# the owner's.  Prints each write outside its owner as FILE:LINE: FIELD
# (owner: NAME.c), then a summary; exit 0 none, 1 some, 2 a bad call.
set -u
names='rc|self|me'
if [ "${1:-}" = -p ]; then
	[ $# -ge 2 ] || { echo "owners: -p takes names" >&2; exit 2; }
	names=$2
	shift 2
fi
[ $# -ge 3 ] || { sed -n '6,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
hdr=$1 st=$2
shift 2
[ -r "$hdr" ] || { echo "owners: cannot read $hdr" >&2; exit 2; }
exec perl -e '
	my ($ptr, $hdr, $st, @files) = @ARGV;
	open(my $h, "<", $hdr) or die "owners: $hdr: $!\n";
	my ($in, $owner, %own) = (0, "");
	while (<$h>) {
		if (!$in) { $in = 1 if /^struct \Q$st\E \{/; next; }
		last if /^\};/;
		if (m{/\*\s*owner:\s*(\S+\.c)}) { $owner = $1; next; }
		s{/\*.*?\*/}{}g; s{/\*.*}{}; s{^\s*\*.*}{};
		next unless $owner && /;/;
		my $d = $_; $d =~ s/;.*//s; $d =~ s/\[[^\]]*\]//g;
		my @parts = split /,/, $d;
		my ($first) = $parts[0] =~ /(\w+)\s*$/;
		$own{$first} = $owner if defined $first;
		for my $p (@parts[1..$#parts]) {
			my ($n) = $p =~ /(\w+)\s*$/;
			$own{$n} = $owner if defined $n;
		}
	}
	die "owners: no struct $st with owner groups in $hdr\n" unless %own;
	my $names = join "|", sort keys %own;
	my ($writes, $bad) = (0, 0);
	my $acc = qr/(?:\.\w+|\[[^\]]*\])*/;
	for my $f (@files) {
		open(my $c, "<", $f) or die "owners: $f: $!\n";
		(my $base = $f) =~ s{.*/}{};
		while (my $l = <$c>) {
			my @hits;
			while ($l =~ /\b(?:$ptr)->($names)\b$acc\s*(?:[-+*\/%|&^]|<<|>>)?=(?!=)/g) { push @hits, $1; }
			while ($l =~ /\b(?:$ptr)->($names)\b$acc\s*(?:\+\+|--)/g) { push @hits, $1; }
			while ($l =~ /(?:\+\+|--)\s*(?:$ptr)->($names)\b/g) { push @hits, $1; }
			for my $fld (@hits) {
				$writes++;
				next if $own{$fld} eq $base;
				$bad++;
				print "$f:$.: $fld (owner: $own{$fld})\n";
			}
		}
	}
	printf "owners: struct %s: %d fields in %d groups, %d writes in %d files, %d outside their owner\n",
		$st, scalar(keys %own), scalar(keys %{{ reverse %own }}), $writes, scalar(@files), $bad;
	exit($bad ? 1 : 0);
' "$names" "$hdr" "$st" "$@"
