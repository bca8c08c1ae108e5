# shellcheck shell=sh disable=SC1091,SC2086,SC2034,SC2012,SC2317
# Scenario 12 (issue 11): a process of two busy threads with 1 MiB of its own memory, far
# below min_rss_mib, is homed on one node: its threads share one address space, which one
# node keeps local (docs/PLACEMENT.md, "Several busy threads count whatever their memory").
# A process of one busy thread with as little memory is left to the kernel. Both get their
# CPUs back when the daemon stops.
. /lib/hn.sh
sysctl -qw kernel.numa_balancing=0
lightjob 2 1000 1 &
PAIR=$!
lightjob 1 600 1 &
SOLO=$!
sleep 1
pair_before=$(thread_masks "$PAIR" | tr '\n' ' ')
solo_before=$(thread_masks "$SOLO" | tr '\n' ' ')
echo "before: pair masks $pair_before; solo mask $solo_before"
T0=$(now)
start_daemon --set 'rules.include.comms=["lightjob"]'
wait_home "$PAIR" 20
if [ "$home" != - ]; then
    ok pair-homed "both threads of the 2-thread lightjob ($PAIR) set to node $home's CPUs ($(node_cpus "$home")) after $(elapsed "$T0") s"
    figure pair_homed_s "$(elapsed "$T0")" s
else
    fail pair-homed "the 2-thread lightjob not on one node after $(elapsed "$T0") s: masks $(thread_masks "$PAIR" | tr '\n' ' ')"
fi
sleep 3
check pair-stays "the 2-thread lightjob still on node $home 3 s later" -- [ "$home" != - ] && [ "$(home_of "$PAIR")" = "$home" ]
if grep -q "pid $SOLO:.*set home" "$DAEMON_LOG"; then
    fail solo-alone "the daemon homed the 1-thread lightjob ($SOLO): $(grep "pid $SOLO:.*set home" "$DAEMON_LOG" | head -n 1)"
else
    ok solo-alone "no home for the 1-thread lightjob ($SOLO, 1 MiB) in the daemon's log"
fi
stop_daemon
check daemon-exit "homenode run exits 0 on SIGTERM (rc $DAEMON_RC)" -- [ "$DAEMON_RC" -eq 0 ]
check pair-restored "the 2-thread lightjob back to '$pair_before' after SIGTERM" -- \
    [ "$(thread_masks "$PAIR" | tr '\n' ' ')" = "$pair_before" ]
check solo-untouched "the 1-thread lightjob still at '$solo_before'" -- \
    [ "$(thread_masks "$SOLO" | tr '\n' ' ')" = "$solo_before" ]
stop_pids "$PAIR" "$SOLO"
[ "$HN_FAILED" = 0 ] || show_log "$DAEMON_LOG"
exit 0
