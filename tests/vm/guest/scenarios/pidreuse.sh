# shellcheck shell=sh disable=SC1091,SC2086,SC2034,SC2012,SC2317
# Scenario 11: a reused PID. An idle process (`sleep`) is read by the daemon's
# light passes and then exits; its PID is handed to a memhog (through
# /proc/sys/kernel/ns_last_pid, as checkpoint/restore tools set the next PID). With idle
# processes re-read only every 1000 intervals and no full rescan for 1000, the daemon must
# still see a new process there (the range of PIDs handed out since its last listing, from
# /proc/loadavg) and home it within a few intervals, not leave the old idle figures in place.
. /lib/hn.sh
sysctl -qw kernel.numa_balancing=0
INTERVAL=1
start_daemon --set 'rules.include.comms=["memhog"]' --set scan.idle_every=1000 \
    --set scan.full_rescan_every=1000
intervals() {
    homenode status --socket /run/hn/hn.sock --json >/tmp/status.json 2>/dev/null &&
        vmhelper status /tmp/status.json | awk '{ print $1 }'
}
sleep 1000 &
S=$!
# Three intervals after it started: read at least twice (the second read finds it idle).
i=0
k0=
while [ "$i" -lt 80 ]; do # 20 s
    k=$(intervals)
    [ -n "$k" ] && [ -z "$k0" ] && k0=$k
    [ -n "$k0" ] && [ -n "$k" ] && [ "$k" -ge $((k0 + 3)) ] && break
    sleep 0.25
    i=$((i + 1))
done
three_read() { [ -n "$k0" ] && [ "$k" -ge $((k0 + 3)) ]; }
check idle-read "the daemon ran 3 intervals with sleep $S idle (intervals $k0 -> $k)" -- three_read
kill "$S"
wait "$S" 2>/dev/null
if ! [ -w /proc/sys/kernel/ns_last_pid ]; then
    fail reuse "/proc/sys/kernel/ns_last_pid is not writable: the guest kernel cannot set the next PID"
else
    # The next fork takes PID S: the shell forks nothing in between (`echo` is a builtin).
    echo $((S - 1)) >/proc/sys/kernel/ns_last_pid
    memhog 48 &
    H=$!
    check reuse "memhog has the idle process's PID ($H, was $S)" -- [ "$H" = "$S" ]
    T0=$(now)
    wait_home "$H" 8
    if [ "$home" != - ]; then
        ok homed "the memhog on the reused PID $H was homed on node $home after $(elapsed "$T0") s"
        figure pidreuse_home_s "$(elapsed "$T0")" s
    else
        fail homed "the memhog on the reused PID $H was not homed within $(elapsed "$T0") s: mask $(thread_masks "$H" | tr '\n' ' ')"
    fi
    stop_pids "$H"
fi
stop_daemon
check daemon-exit "homenode run exits 0 on SIGTERM (rc $DAEMON_RC)" -- [ "$DAEMON_RC" -eq 0 ]
[ "$HN_FAILED" = 0 ] || show_log "$DAEMON_LOG"
exit 0
