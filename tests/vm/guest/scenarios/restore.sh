# shellcheck shell=sh disable=SC1091,SC2086,SC2034,SC2012,SC2317
# Scenario 4: SIGTERM restores every affinity; after SIGKILL, `homenode run --restore`
# restores them from the journal.
. /lib/hn.sh
sysctl -qw kernel.numa_balancing=0
lightjob 3 600 32 &
A=$!
memhog 48 &
B=$!
sleep 1
orig_a=$(thread_masks "$A")
orig_b=$(thread_masks "$B")
echo "originals: lightjob $orig_a, memhog $orig_b"
# wait_homed: both processes narrowed by the daemon, within 20 s.
wait_homed() {
    i=0
    while [ "$i" -lt 40 ]; do
        if [ "$(home_of "$A")" != - ] && [ "$(home_of "$B")" != - ]; then return 0; fi
        sleep 0.5
        i=$((i + 1))
    done
    return 1
}
both_homed() { [ "$(home_of "$A")" != - ] && [ "$(home_of "$B")" != - ]; }
masks() { echo "lightjob $(thread_masks "$A" | tr '\n' ' ')memhog $(thread_masks "$B" | tr '\n' ' ')"; }
originals="lightjob $orig_a memhog $orig_b "

start_daemon --set 'rules.include.comms=["lightjob","memhog"]'
wait_homed
check homed-1 "both homed by the daemon: $(masks)" -- both_homed
stop_daemon
check term-exit "homenode run exits 0 on SIGTERM (rc $DAEMON_RC)" -- [ "$DAEMON_RC" -eq 0 ]
check term-restored "after SIGTERM: $(masks)" -- [ "$(masks)" = "$originals" ]

start_daemon --set 'rules.include.comms=["lightjob","memhog"]'
wait_homed
check homed-2 "homed again: $(masks)" -- both_homed
homed=$(masks)
kill -KILL "$DAEMON"
wait "$DAEMON" 2>/dev/null || true
sleep 1
check kill-left "after SIGKILL the masks stay the daemon's: $(masks)" -- [ "$(masks)" = "$homed" ]
check journal-kept "the journal survives SIGKILL ($(wc -c </tmp/hn/journal.json) bytes)" -- \
    grep -q "$A" /tmp/hn/journal.json
out=$(homenode run --restore --journal /tmp/hn/journal.json --socket /run/hn/hn.sock 2>&1)
rc=$?
echo "$out"
check restore-exit "homenode run --restore exits 0 (rc $rc)" -- [ "$rc" -eq 0 ]
check restore-restored "after --restore: $(masks)" -- [ "$(masks)" = "$originals" ]
stop_pids "$A" "$B"
[ "$HN_FAILED" = 0 ] || show_log "$DAEMON_LOG"
exit 0
