# shellcheck shell=sh disable=SC1091,SC2086,SC2034,SC2012,SC2317
# Scenario 2: four memory-heavy busy processes whose memory all starts on node 0. Under
# `homenode run` each must end with its own home node (every thread's affinity exactly that
# node's CPUs) and at least 90% of its own pages there, within BOUND intervals.
. /lib/hn.sh
MIB=96
INTERVAL=0.5
BOUND=60
sysctl -qw kernel.numa_balancing=0 # the daemon alone moves memory here
start_hogs 4 "$MIB" || exit 1
for p in $HOGS; do
    pct=$(pct_on "$p" 0)
    check "start-node0-$p" "memhog $p starts with $pct% of its $MIB MiB on node 0" -- \
        awk -v x="$pct" 'BEGIN { exit !(x >= 90) }'
done
T0=$(now)
start_daemon --set 'rules.include.comms=["memhog"]'
watch home "$(awk -v b="$BOUND" -v i="$INTERVAL" 'BEGIN { print b * i + 5 }')" stop
if [ "$CONV_S" != never ]; then
    ok converged "each memhog homed on its own node with >= 90% of its pages there after $CONV_S s (daemon interval $CONV_INTERVALS)"
    figure converge_s "$CONV_S" s
    figure converge_intervals "$CONV_INTERVALS"
    if [ "$CONV_INTERVALS" != - ] && [ "$CONV_INTERVALS" -le "$BOUND" ]; then
        ok converge-bound "$CONV_INTERVALS intervals <= $BOUND"
    else
        fail converge-bound "converged at interval '$CONV_INTERVALS', bound $BOUND"
    fi
else
    fail converged "not converged after $(elapsed "$T0") s: $LAST (NODE:PCT per memhog)"
fi
# It stays converged: homes do not move and memory stays home.
sleep 3
after=$(state home $HOGS)
if converged "$after"; then ok stays "3 s later: $after"; else fail stays "3 s later: $after"; fi
i=0
for p in $HOGS; do
    echo "HN-ROW converge memhog $p home $(home_of "$p") own_pages_per_node $(own_pages "$p" | tr ' ' '/') on_home_pct $(pct_on "$p" "$(home_of "$p")")"
    i=$((i + 1))
done
stop_daemon
check daemon-exit "homenode run exits 0 on SIGTERM (rc $DAEMON_RC)" -- [ "$DAEMON_RC" -eq 0 ]
stop_pids $HOGS
[ "$HN_FAILED" = 0 ] || show_log "$DAEMON_LOG"
exit 0
