# shellcheck shell=sh disable=SC1091,SC2086,SC2034,SC2012,SC2317
# Scenario 3: a light 4-thread process is kept on one node; a process the user pinned is
# never touched (its affinity and its memory stay as they were).
. /lib/hn.sh
sysctl -qw kernel.numa_balancing=0 # so that only the daemon could move the pinned pages
lightjob 4 150 32 &
LIGHT=$!
rm -f /tmp/ready.pin
taskset -c 1 pinhog 48 --ready /tmp/ready.pin &
PIN=$!
while [ ! -e /tmp/ready.pin ]; do sleep 0.1; done
sleep 1
pin_mask=$(thread_masks "$PIN")
pin_pages=$(own_pages "$PIN")
light_before=$(thread_masks "$LIGHT" | tr '\n' ' ')
echo "before: lightjob masks $light_before; pinhog mask $pin_mask pages $pin_pages"
T0=$(now)
start_daemon --set 'rules.include.comms=["lightjob","pinhog"]'
wait_home "$LIGHT" 20
if [ "$home" != - ]; then
    ok light-homed "all 4 threads of lightjob set to node $home's CPUs ($(node_cpus "$home")) after $(elapsed "$T0") s"
    figure light_homed_s "$(elapsed "$T0")" s
else
    fail light-homed "lightjob not on one node after $(elapsed "$T0") s: masks $(thread_masks "$LIGHT" | tr '\n' ' ')"
fi
threads=$(ls /proc/"$LIGHT"/task | wc -l)
check light-threads "lightjob has $threads threads" -- [ "$threads" -eq 4 ]
# Watch a while longer: it stays on that node, and the pinned process is untouched.
sleep 5
check light-stays "lightjob still on node $home 5 s later" -- [ "$(home_of "$LIGHT")" = "$home" ]
check pinned-mask "pinhog mask still '$pin_mask': $(thread_masks "$PIN")" -- [ "$(thread_masks "$PIN")" = "$pin_mask" ]
check pinned-pages "pinhog pages per node unchanged: before $pin_pages, now $(own_pages "$PIN")" -- \
    [ "$(own_pages "$PIN")" = "$pin_pages" ]
status=$(homenode status --wide --socket /run/hn/hn.sock 2>&1)
echo "$status"
if echo "$status" | grep -E "^ *$PIN +pinhog " | grep -q "pinned by someone else"; then
    ok pinned-status "homenode status shows pinhog left alone: pinned by someone else"
else
    fail pinned-status "homenode status line for pinhog: $(echo "$status" | grep -E "^ *$PIN " || echo none)"
fi
if grep -q "pid $PIN:.*set home" "$DAEMON_LOG"; then fail pinned-log "the daemon acted on pinhog"; else ok pinned-log "no action on pinhog in the daemon's log"; fi
stop_daemon
check daemon-exit "homenode run exits 0 on SIGTERM (rc $DAEMON_RC)" -- [ "$DAEMON_RC" -eq 0 ]
check light-restored "lightjob back to '$light_before' after SIGTERM" -- \
    [ "$(thread_masks "$LIGHT" | tr '\n' ' ')" = "$light_before" ]
stop_pids "$LIGHT" "$PIN"
[ "$HN_FAILED" = 0 ] || show_log "$DAEMON_LOG"
exit 0
