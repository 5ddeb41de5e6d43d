#!/usr/bin/env bash
# test-failures.sh prints, for every test that failed in a `go test -v`
# log, the last lines that test wrote (with -v, a failing test's message
# is printed where it happened, among the lines of the tests that ran in
# parallel with it, so the end of a long log does not show it).
#
#   scripts/test-failures.sh LOG [LINES]    LINES per failing test (default 15)
set -euo pipefail
log="${1:?usage: test-failures.sh LOG [LINES]}"
lines="${2:-15}"
awk -v n="$lines" '
  /^=== (RUN|CONT|NAME|PAUSE) / { cur = $3; next }
  /^ *--- (FAIL|PASS|SKIP): / {
    name = $3
    if ($2 == "FAIL:") { if (!(name in failed)) order[++nf] = name; failed[name] = 1 }
    next
  }
  /^(FAIL|PASS|ok)([ \t]|$)/ { next }
  cur != "" { c = cnt[cur]++ ; buf[cur, c % n] = $0 }
  END {
    if (nf == 0) exit
    print ""
    print "failures (the last lines each failing test wrote):"
    for (i = 1; i <= nf; i++) {
      t = order[i]; k = cnt[t] + 0
      print "  " t ":"
      for (j = (k > n ? k - n : 0); j < k; j++) print "  " buf[t, j % n]
    }
  }' "$log"
