# shellcheck shell=sh disable=SC1091,SC2086,SC2034,SC2012,SC2317
# Scenario 12: a process of two busy threads with 1 MiB of its own memory, far
# below min_rss_mib, gets a home: its threads share one address space, which one node keeps
# local (docs/PLACEMENT.md, "Several busy threads count whatever their memory"). A process of
# one busy thread with as little memory is left to the kernel. Both get their CPUs back when
# the daemon stops. Which nodes the home has is the policy's room rule: on a guest whose idle
# CPUs look busy under TCG, neither 2-CPU node may have room for 1.8 CPUs, and the home then
# spans both. The checks take the home the daemon logged, and its CPUs, as the expectation.
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
line=
_n=0
while [ "$_n" -lt 80 ]; do # 20 s
    line=$(grep -m 1 "pid $PAIR: set home" "$DAEMON_LOG")
    [ -n "$line" ] && break
    sleep 0.25
    _n=$((_n + 1))
done
if [ -n "$line" ]; then
    ok pair-homed "the 2-thread lightjob ($PAIR) got a home after $(elapsed "$T0") s: ${line#*INFO }"
    figure pair_homed_s "$(elapsed "$T0")" s
else
    fail pair-homed "no home for the 2-thread lightjob ($PAIR) after $(elapsed "$T0") s"
fi
why_threads() { echo "$line" | grep -q 'placed for its 2 busy threads'; }
check pair-why "the home's reason names its busy threads" -- why_threads
cpus=$(echo "$line" | sed -n 's/.*set home [0-9,]* (CPUs \([^)]*\)).*/\1/p')
on_home() { [ -n "$cpus" ] && [ "$(thread_masks "$PAIR")" = "$cpus" ]; }
sleep 3
check pair-masks "the 2-thread lightjob's threads on its home's CPUs ($cpus) 3 s later: $(thread_masks "$PAIR" | tr '\n' ' ')" -- on_home
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
