# shellcheck shell=sh disable=SC1091,SC2086,SC2034,SC2012,SC2317
# Scenario 7: a process whose threads set their own CPU mask to every CPU with
# sched_setaffinity after homenode homed it (as `perf bench numa`'s workers do) is not
# "pinned by someone else": the daemon homes it again and keeps it homed. Before the fix the
# daemon released it for good ("pinned by someone else: CPUs 0-3").
. /lib/hn.sh
sysctl -qw kernel.numa_balancing=0
INTERVAL=0.5
WIDEN_S=8
selfhog 48 "$WIDEN_S" &
S=$!
T0=$(now)
start_daemon --set 'rules.include.comms=["selfhog"]'
# wait_home SECONDS: until every thread of selfhog is on one node's CPUs.
wait_home() {
    i=0
    while [ "$i" -lt $(($1 * 2)) ]; do
        [ "$(home_of "$S")" != - ] && return 0
        sleep 0.5
        i=$((i + 1))
    done
    return 1
}
if wait_home 20; then
    ok homed "selfhog homed on node $(home_of "$S") after $(elapsed "$T0") s"
    figure time_to_home_s "$(elapsed "$T0")" s
else
    fail homed "selfhog not homed after 20 s: masks $(thread_masks "$S" | tr '\n' ' ')"
fi
# Its threads widen their masks WIDEN_S s after it started; the daemon must notice it.
deadline=$(($(date +%s) + WIDEN_S + 90))
while ! grep -q "pid $S (selfhog): a thread set its mask to all its CPUs" "$DAEMON_LOG"; do
    [ "$(date +%s)" -lt "$deadline" ] || break
    sleep 0.5
done
if grep -q "pid $S (selfhog): a thread set its mask to all its CPUs" "$DAEMON_LOG"; then
    ok widened-seen "the daemon saw the widened mask as not a pin"
else
    fail widened-seen "no 'set its mask to all its CPUs' line for pid $S in the daemon's log"
fi
if wait_home 10; then
    ok homed-again "selfhog homed again on node $(home_of "$S")"
else
    fail homed-again "selfhog not homed again after 10 s: masks $(thread_masks "$S" | tr '\n' ' ')"
fi
sleep 5
home=$(home_of "$S")
check kept "selfhog still homed 5 s later (node $home, masks $(thread_masks "$S" | tr '\n' ' '))" -- [ "$home" != - ]
if grep -E "pid $S[: ]" "$DAEMON_LOG" | grep -q "pinned by someone else\|left alone"; then
    fail not-pinned "the daemon left selfhog alone: $(grep -E "pid $S[: ]" "$DAEMON_LOG" | grep "pinned by someone else\|left alone" | head -n 1)"
else
    ok not-pinned "the daemon never called selfhog pinned by someone else"
fi
echo "HN-ROW selfaffinity selfhog $S home $home masks $(thread_masks "$S" | tr '\n' '/')"
stop_daemon
check daemon-exit "homenode run exits 0 on SIGTERM (rc $DAEMON_RC)" -- [ "$DAEMON_RC" -eq 0 ]
stop_pids "$S"
[ "$HN_FAILED" = 0 ] || show_log "$DAEMON_LOG"
exit 0
