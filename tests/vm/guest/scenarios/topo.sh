# shellcheck shell=sh disable=SC1091,SC2086,SC2034,SC2012,SC2317
# Scenario 1: what `homenode topo` reports. The host compares the HN-TOPO lines with what it
# gave QEMU; here the same report is also checked against the kernel's own /sys files.
. /lib/hn.sh
out=$(homenode topo 2>&1) || { fail topo-runs "homenode topo failed: $out"; exit 1; }
echo "$out"
echo "$out" | sed 's/^/HN-TOPO /'
# Cross-check with /sys: every node's CPU list and distances.
for n in $(nodes); do
    cpus=$(node_cpus "$n")
    if echo "$out" | grep -q "^node $n (kernel node $n): CPUs $cpus "; then
        ok "sys-cpus-node$n" "node $n CPUs $cpus as in /sys"
    else
        fail "sys-cpus-node$n" "node $n: /sys says CPUs $cpus"
    fi
    kib=$(awk '/MemTotal/ { print $4 }' "/sys/devices/system/node/node$n/meminfo")
    mib=$(echo "$out" | sed -n "s/^node $n .*memory \([0-9]*\) MiB.*/\1/p")
    if [ -n "$mib" ] && [ $((kib / 1024 - mib)) -le 1 ] && [ $((mib - kib / 1024)) -le 1 ]; then
        ok "sys-memory-node$n" "node $n $mib MiB, MemTotal $kib kB"
    else
        fail "sys-memory-node$n" "node $n: reported '$mib' MiB, MemTotal $kib kB"
    fi
    dist=$(cat "/sys/devices/system/node/node$n/distance")
    row=$(echo "$out" | awk '/^distances:/ { d = 1; next } d { print }' | sed -n "$((n + 1))p" | awk '{ $1 = $1; print }')
    if [ "$row" = "$dist" ]; then ok "sys-distance-node$n" "$dist"; else fail "sys-distance-node$n" "/sys '$dist', reported '$row'"; fi
done
