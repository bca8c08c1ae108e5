# shellcheck shell=sh disable=SC2034,SC2086,SC2012
# Shell helpers for the guest scenarios (busybox sh). Sourced by /scenarios/*.sh.
# Output protocol, read by tests/vm/run.sh on the host:
#   HN-CHECK ok|FAIL NAME DETAIL     one assertion
#   HN-FIGURE NAME VALUE [UNIT]      one measured figure
#   HN-ROW TABLE CELLS...            one row of a result table
# Anything else is shown only when the scenario fails (or with run.sh --verbose).

set -u
HN_FAILED=0
DAEMON_LOG=/tmp/daemon.log

ok() { echo "HN-CHECK ok $*"; }
fail() { echo "HN-CHECK FAIL $*"; HN_FAILED=1; }
figure() { echo "HN-FIGURE $*"; }
# check NAME DETAIL -- CONDITION...: ok when the command succeeds.
check() {
    name=$1 detail=$2
    shift 3
    if "$@"; then ok "$name" "$detail"; else fail "$name" "$detail"; fi
}
has_opt() { case ",$HN_OPTS," in *",$1,"*) return 0 ;; esac; return 1; }

# Seconds since boot, two decimals.
now() { read -r up _ </proc/uptime; echo "$up"; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

nodes() { ls -d /sys/devices/system/node/node[0-9]* | sed 's|.*/node||' | sort -n; }
node_count() { nodes | wc -l; }
node_cpus() { cat "/sys/devices/system/node/node$1/cpulist"; }
all_cpus() { cat /sys/devices/system/cpu/online; }
# Node whose CPU list is exactly LIST, or "-".
node_of_cpulist() {
    for n in $(nodes); do
        if [ "$(node_cpus "$n")" = "$1" ]; then echo "$n"; return; fi
    done
    echo -
}
cpu_node() {
    for n in $(nodes); do
        if [ -e "/sys/devices/system/node/node$n/cpu$1" ]; then echo "$n"; return; fi
    done
    echo -
}

# Affinity of every thread of PID, one distinct list per line.
thread_masks() {
    for s in /proc/"$1"/task/*/status; do
        sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$s" 2>/dev/null
    done | sort -u
}
# Scheduling attributes of every thread of PID on one line: per thread its TID, nice value,
# real-time priority and policy (fields 19, 40 and 41 of its stat; the commands here hold no
# spaces), separated by "; ".
sched_attrs() {
    for s in /proc/"$1"/task/*/stat; do
        awk '{ print $1, "nice=" $19, "rtprio=" $40, "policy=" $41 }' "$s" 2>/dev/null
    done | sort | awk '{ printf "%s%s", (NR > 1 ? "; " : ""), $0 } END { print "" }'
}
# The node PID is homed on: every thread's mask is exactly one node's CPUs; else "-".
home_of() {
    m=$(thread_masks "$1")
    if [ "$(echo "$m" | wc -l)" -ne 1 ]; then echo -; return; fi
    node_of_cpulist "$m"
}
# wait_home PID SECONDS: look every 0.25 s, for at most SECONDS, until PID is homed; sets
# `home` to its node, or to "-" when the wait ran out (then returns 1).
wait_home() {
    home=-
    _n=0
    while [ "$_n" -lt $(($2 * 4)) ]; do
        home=$(home_of "$1")
        [ "$home" != - ] && return 0
        sleep 0.25
        _n=$((_n + 1))
    done
    return 1
}
# Node of the CPU PID last ran on (field 39 of stat; the command holds no spaces here).
running_node() { cpu_node "$(awk '{ print $39 }' "/proc/$1/stat")"; }
# Pages of PID's own memory (anonymous, heap, stack) per node, space separated.
own_pages() { vmhelper mem "$1" | awk '{ for (i = 2; $i != "total"; i++) printf "%s%s", (i > 2 ? " " : ""), $i; print "" }'; }
# Percent of PID's own pages on node N.
pct_on() {
    own_pages "$1" | awk -v n="$2" '{ t = 0; for (i = 1; i <= NF; i++) t += $i;
        if (t == 0) { print 0; exit } printf "%.1f", 100 * $(n + 1) / t }'
}

# start_hogs COUNT MIB: COUNT memhog processes, each first touching MIB MiB while pinned
# to node 0's CPUs (so all their memory starts on node 0), then given back every CPU, so
# that nothing of the start-up pinning remains. Sets HOGS to their PIDs.
start_hogs() {
    HOGS=
    rm -f /tmp/ready.*
    i=0
    while [ "$i" -lt "$1" ]; do
        taskset -c "$(node_cpus 0)" memhog "$2" --ready "/tmp/ready.$i" &
        HOGS="$HOGS $!"
        i=$((i + 1))
    done
    deadline=$(( $(date +%s) + 120 ))
    while [ "$(ls /tmp/ready.* 2>/dev/null | wc -l)" -lt "$1" ]; do
        [ "$(date +%s)" -lt "$deadline" ] || { fail hogs-ready "memhogs not ready after 120 s"; return 1; }
        sleep 0.1
    done
    for p in $HOGS; do taskset -p -c "$(all_cpus)" "$p" >/dev/null; done
}
stop_pids() {
    for p in "$@"; do kill "$p" 2>/dev/null || true; done
    for p in "$@"; do wait "$p" 2>/dev/null || true; done
}

# Start the daemon in the background with the rig's settings plus ARGS; sets DAEMON.
# The interval is ${INTERVAL:-0.5} s; its log filter is ${HN_LOG:-info} (RUST_LOG).
start_daemon() {
    RUST_LOG="${HN_LOG:-info}" homenode run --journal /tmp/hn/journal.json --socket /run/hn/hn.sock \
        --interval "${INTERVAL:-0.5}" --set placement.homenode.min_rss_mib=16 "$@" >>"$DAEMON_LOG" 2>&1 &
    DAEMON=$!
}
stop_daemon() {
    kill -TERM "$DAEMON" 2>/dev/null || true
    wait "$DAEMON" 2>/dev/null
    DAEMON_RC=$?
}
show_log() {
    echo "--- $1 (last 60 lines)"
    tail -n 60 "$1" 2>/dev/null | sed 's/^/  | /'
}

# Locality state of a set of PIDs. Prints one word per PID: NODE:PCT, where NODE is its
# home (affinity) or with "run" the node it is running on, and PCT the percent of its own
# pages there; then "distinct" or "shared" for the nodes.
state() {
    mode=$1
    shift
    seen=
    distinct=distinct
    for p in "$@"; do
        if [ "$mode" = run ]; then n=$(running_node "$p"); else n=$(home_of "$p"); fi
        if [ "$n" = - ]; then pct=0; else pct=$(pct_on "$p" "$n"); fi
        case " $seen " in *" $n "*) distinct=shared ;; esac
        [ "$n" = - ] && distinct=shared
        seen="$seen $n"
        printf '%s:%s ' "$n" "$pct"
    done
    echo "$distinct"
}
# True when a state line shows distinct nodes and every PCT >= 90.
converged() {
    [ "${1##* }" = distinct ] && all_local "$1"
}
# True when every PCT of a state line is >= 90 (on whatever nodes).
all_local() {
    echo "$1" | awk '{ for (i = 1; i < NF; i++) { split($i, a, ":"); if (a[2] + 0 < 90) exit 1 } }'
}
# Mean of the PCT fields of a state line.
mean_locality() {
    echo "$1" | awk '{ t = 0; for (i = 1; i < NF; i++) { split($i, a, ":"); t += a[2] }
        printf "%.1f", t / (NF - 1) }'
}

# watch MODE WINDOW_S [stop]: polls the state of $HOGS every 0.5 s from T0 (set by the caller)
# until WINDOW_S seconds have passed, or, with "stop", until they have converged. Sets
# CONV_S (seconds from T0 to the first converged state, or "never"), CONV_INTERVALS (the
# daemon's interval count then, when a daemon runs), LOCAL_S (the first time all were
# local, on any nodes) and LAST (the last state line).
watch() {
    CONV_S=never CONV_INTERVALS=- LOCAL_S=never
    while :; do
        el=$(elapsed "$T0")
        LAST=$(state "$1" $HOGS)
        if [ "$LOCAL_S" = never ] && all_local "$LAST"; then LOCAL_S=$el; fi
        if [ "$CONV_S" = never ] && converged "$LAST"; then
            CONV_S=$el
            if [ -n "${DAEMON:-}" ]; then
                CONV_INTERVALS=$(homenode status --socket /run/hn/hn.sock --json 2>/dev/null |
                    sed -n 's/.*"intervals": *\([0-9]*\).*/\1/p' | head -n 1)
            fi
            [ "${3:-}" = stop ] && return 0
        fi
        if awk -v e="$el" -v w="$2" 'BEGIN { exit !(e >= w) }'; then return 0; fi
        if [ -n "${DAEMON:-}" ] && ! kill -0 "$DAEMON" 2>/dev/null; then
            fail daemon-alive "homenode run exited after $el s"
            return 0
        fi
        sleep 0.5
    done
}
