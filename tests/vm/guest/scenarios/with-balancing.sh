# shellcheck shell=sh disable=SC1091,SC2086,SC2034,SC2012,SC2317
# Scenario with-balancing: scenario 2's four memhogs (memory all on node 0) under
# the kernel's NUMA balancing alone, then under homenode with the balancing left on (the
# recommended mode, docs/PLACEMENT.md). homenode must bring them to four separate nodes with
# their memory at least as fast as the kernel alone does (or at all, when the kernel does not
# within the window), to the resolution of the measurement: `watch` polls every 0.5 s and a
# poll of four processes' numa_maps takes up to 0.5 s more under TCG, so times 1 s apart
# cannot be told apart.
. /lib/hn.sh
MIB=96
INTERVAL=0.5
WINDOW=90
# The decisions' notes too: why a homed hog's remote memory was not asked to move (a failed
# boot once showed homes without moves, docs/VM.md scenario 9).
HN_LOG=info,homenode::decision=debug
sysctl -qw kernel.numa_balancing=1
echo "HN-ROW withbal placement own_nodes_s local_s final_state(node:pct)"
for method in kernel homenode; do
    start_hogs 4 "$MIB" || exit 1
    T0=$(now)
    DAEMON=
    [ "$method" = homenode ] && start_daemon --set 'rules.include.comms=["memhog"]'
    watch run "$WINDOW" stop
    echo "HN-ROW withbal $method $CONV_S $LOCAL_S $(echo "$LAST" | tr ' ' ',')"
    figure "${method}_own_nodes_s" "$CONV_S"
    if [ "$method" = homenode ]; then
        stop_daemon
        check daemon-exit "homenode run exits 0 on SIGTERM (rc $DAEMON_RC)" -- [ "$DAEMON_RC" -eq 0 ]
        HOMENODE_S=$CONV_S
    else
        KERNEL_S=$CONV_S
    fi
    stop_pids $HOGS
done
sysctl -qw kernel.numa_balancing=0
check withbal-converged "homenode with numa_balancing=1: four memhogs on four nodes, >= 90% local (after $HOMENODE_S s)" -- \
    [ "$HOMENODE_S" != never ]
check withbal-not-slower "homenode with balancing ($HOMENODE_S s) converges no later than the kernel alone ($KERNEL_S s), to the poll's 1 s" -- \
    awk -v h="$HOMENODE_S" -v k="$KERNEL_S" 'BEGIN { if (h == "never") exit 1; if (k == "never") exit 0; exit !(h + 0 <= k + 1) }'
[ "$HN_FAILED" = 0 ] || show_log "$DAEMON_LOG"
exit 0
