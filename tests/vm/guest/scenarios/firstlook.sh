# shellcheck shell=sh disable=SC1091,SC2086,SC2034,SC2012,SC2317
# Scenario 10: first looks. With a long interval (10 s), a memhog started after the
# daemon's first interval is homed by a first look (every 0.5 s, homenode's default
# first_look_s: seen at one look, placed at the next with the same thread count), before the
# daemon's second interval.
. /lib/hn.sh
sysctl -qw kernel.numa_balancing=0
INTERVAL=10
start_daemon --set 'rules.include.comms=["memhog"]'
# The daemon's interval count from its status (empty until it answers).
intervals() {
    homenode status --socket /run/hn/hn.sock --json >/tmp/status.json 2>/dev/null &&
        vmhelper status /tmp/status.json | awk '{ print $1 }'
}
i=0
while [ "$(intervals)" != 1 ] && [ "$i" -lt 80 ]; do # 20 s
    sleep 0.25
    i=$((i + 1))
done
check first-interval "the daemon's first interval has run (intervals: $(intervals))" -- [ "$(intervals)" = 1 ]
T0=$(now)
memhog 48 &
H=$!
wait_home "$H" 8 # before the next interval at 10 s
k=$(intervals)
if [ "$home" != - ]; then
    ok homed "memhog homed on node $home after $(elapsed "$T0") s"
    figure firstlook_home_s "$(elapsed "$T0")" s
else
    fail homed "memhog not homed after $(elapsed "$T0") s: mask $(thread_masks "$H" | tr '\n' ' ')"
fi
check by-a-look "homed before the daemon's second interval (intervals so far: $k)" -- [ "$k" = 1 ]
if grep -q "pid $H: set home" "$DAEMON_LOG"; then
    ok logged "the home is in the daemon's log: $(grep "pid $H: set home" "$DAEMON_LOG" | head -n 1 | cut -c1-160)"
else
    fail logged "no 'pid $H: set home' line in the daemon's log"
fi
stop_daemon
check daemon-exit "homenode run exits 0 on SIGTERM (rc $DAEMON_RC)" -- [ "$DAEMON_RC" -eq 0 ]
stop_pids "$H"
[ "$HN_FAILED" = 0 ] || show_log "$DAEMON_LOG"
exit 0
