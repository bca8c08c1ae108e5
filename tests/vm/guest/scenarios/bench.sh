# shellcheck shell=sh disable=SC1091,SC2086,SC2034,SC2012,SC2317
# Scenario 5: `homenode bench numa-test` in the guest: its per-node table has one column per
# guest node, and each job's shares add up to 100%.
. /lib/hn.sh
N=4
T0=$(now)
homenode bench numa-test "$N" --reps 1 --size 200000 --passes 20 --hackbench-groups 2 >/tmp/bench.txt 2>/tmp/bench.err
rc=$?
cat /tmp/bench.txt /tmp/bench.err
check bench-exit "homenode bench numa-test $N exits 0 (rc $rc) in $(elapsed "$T0") s" -- [ "$rc" -eq 0 ]
figure bench_s "$(elapsed "$T0")" s
nn=$(node_count)
header=$(grep -E '^Job ' /tmp/bench.txt | head -n 1)
cols=$(echo "$header" | awk '{ n = 0; for (i = 2; i <= NF && $i != "|"; i++) n++; print n }')
check bench-columns "$cols node columns for $nn nodes: $header" -- [ "$cols" = "$nn" ]
# Job rows of the table: "  1    54.6   45.4 |      0     0  | 2.73"
rows=$(awk '/^Job / { t = 1; next } t && /^ *[0-9]+ .*\|/ { print } t && !/\|/ { t = 0 }' /tmp/bench.txt)
count=$(echo "$rows" | grep -c .)
check bench-rows "$count job rows" -- [ "$count" -eq "$N" ]
bad=$(echo "$rows" | awk -v nn="$nn" '{ s = 0; for (i = 2; i <= nn + 1; i++) s += $i;
    if (s < 99.7 || s > 100.3 || $(nn + 3) < 0 || $(nn + 3) >= nn || $(nn + 4) >= nn) print "job " $1 " sums to " s }')
check bench-sums "every job's node shares add up to 100% (+-0.3 for rounding)${bad:+: $bad}" -- [ -z "$bad" ]
echo "$rows" | while read -r line; do echo "HN-ROW bench $line"; done
exit 0
