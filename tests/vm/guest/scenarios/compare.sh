# shellcheck shell=sh disable=SC1091,SC2086,SC2034,SC2012,SC2317
# Scenario 6: scenario 2's workload under three placements, one after the other in the same
# guest: the kernel's automatic NUMA balancing alone, numad, and homenode run. Each gets
# WINDOW seconds. A process counts as local when at least 90% of its own pages are on the
# node it is running on. The table shows when all four first were local (local_s), when
# they first were local on four different nodes (own_nodes_s), and the mean locality and
# the nodes they ran on at the end of the window.
# numad only considers processes of more than 300 MB (a constant in numad 0.5), so the
# memhogs here are 320 MiB each.
. /lib/hn.sh
MIB=320
# With four memhogs on four nodes (the balanced homes), three must move all 320 MiB: 960 MiB
# at the 16-20 MiB/s that move_pages reaches under TCG (32 MiB batches 1.5-2 s apart) is
# 50-60 s, so the window leaves room for that and for the first decision.
WINDOW=90
echo "HN-ROW compare placement local_s own_nodes_s final_locality_pct final_state(node:pct)"
for method in kernel numad homenode; do
    if [ "$method" = kernel ]; then sysctl -qw kernel.numa_balancing=1; else sysctl -qw kernel.numa_balancing=0; fi
    start_hogs 4 "$MIB" || exit 1
    T0=$(now)
    DAEMON=
    case $method in
        numad)
            args=
            for p in $HOGS; do args="$args -p $p"; done
            # -S 0: only the listed processes; -i 1: scan every second (its shortest).
            numad -S 0 $args -i 1:2 -l 6 ;;
        homenode)
            start_daemon --set 'rules.include.comms=["memhog"]' ;;
    esac
    watch run "$WINDOW"
    loc=$(mean_locality "$LAST")
    echo "HN-ROW compare $method $LOCAL_S $CONV_S $loc $(echo "$LAST" | tr ' ' ',')"
    figure "${method}_local_s" "$LOCAL_S"
    figure "${method}_own_nodes_s" "$CONV_S"
    figure "${method}_final_locality_pct" "$loc"
    case $method in
        numad) numad -i 0 2>/dev/null; sleep 1; kill "$(cat /var/run/numad.pid 2>/dev/null)" 2>/dev/null
            tail -n 30 /var/log/numad.log ;;
        homenode) stop_daemon
            check daemon-exit "homenode run exits 0 on SIGTERM (rc $DAEMON_RC)" -- [ "$DAEMON_RC" -eq 0 ] ;;
    esac
    stop_pids $HOGS
    [ "$method" = homenode ] && HOMENODE_LOCAL_S=$LOCAL_S
done
# The table is the result; the one assertion is that homenode brought every memhog's memory
# to where it runs within the window (scenario 2 asserts separate homes and the bound).
check compare-homenode "homenode: all four memhogs local by the end of the ${WINDOW} s window (first seen at $HOMENODE_LOCAL_S s; polls are 1-3 s apart under TCG)" -- \
    [ "$HOMENODE_LOCAL_S" != never ]
[ "$HN_FAILED" = 0 ] || show_log "$DAEMON_LOG"
exit 0
