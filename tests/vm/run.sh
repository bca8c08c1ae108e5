#!/usr/bin/env bash
# The NUMA virtual-machine test rig: boots Debian's cloud kernel under QEMU with several NUMA
# nodes and runs homenode's scenarios inside it (docs/VM.md).
#
#   tests/vm/run.sh                     every scenario
#   tests/vm/run.sh converge restore    some of them
#   tests/vm/run.sh --shell [2n|4n]     a shell in the guest (Ctrl-D powers it off)
#   tests/vm/run.sh --list              scenarios and shapes
#
# Options: --tcg (software emulation even when KVM works), --verbose (print each guest's whole
# console), --no-build (reuse the cached homenode and initramfs).
# Environment: HOMENODE_VM_CACHE (default target/vm), CARGO_TARGET_DIR, HOMENODE_VM_TIMEOUT
# (seconds per boot, default 600: compare runs three 90 s windows, and under TCG on a shared
# host its guest has stalled for minutes in soft lockups), HOMENODE_VM_RETRIES (second boots of a failed scenario:
# 1 under TCG, 0 under KVM).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${HOMENODE_VM_CACHE:-$repo/target/vm}
cargo_target=${CARGO_TARGET_DIR:-$repo/target}
boot_timeout=${HOMENODE_VM_TIMEOUT:-600}
musl=x86_64-unknown-linux-musl

# scenario -> shapes it boots (one boot per shape)
declare -A SCENARIO_SHAPES=(
    [topo]="2n 4n"
    [converge]="4n"
    [light]="2n"
    [restore]="2n"
    [bench]="4n"
    [compare]="4n"
    [selfaffinity]="2n"
    [numatest8]="4n"
    [with-balancing]="4n"
    [firstlook]="2n"
    [pidreuse]="2n"
    [sharing]="2n"
)
ALL_SCENARIOS=(topo converge light restore bench compare selfaffinity numatest8 with-balancing firstlook pidreuse sharing)

# Shapes: CPUs per node, MiB per node, and the distance matrix row by row.
shape_def() {
    case $1 in
        2n)
            CPUS_PER_NODE=2
            NODE_MIB=(1024 512)
            DIST=("10 21" "21 10")
            ;;
        4n)
            # A ring of four nodes: neighbours at 21, the opposite node at 31. Node 0 is the
            # largest, since the convergence scenarios start all their memory there.
            CPUS_PER_NODE=2
            NODE_MIB=(1792 640 768 640)
            DIST=("10 21 31 21" "21 10 21 31" "31 21 10 21" "21 31 21 10")
            ;;
        *) die "unknown shape $1 (known: 2n 4n)" ;;
    esac
    NODES=${#NODE_MIB[@]}
}

die() { echo "vm rig: $*" >&2; exit 1; }
say() { echo "vm rig: $*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }

# ---------------------------------------------------------------- host requirements

need_apt() {
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing ${missing[*]}"
    [ "$(id -u)" -eq 0 ] || die "need root to apt-get install ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
        || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; } \
        || die "apt-get install ${missing[*]} failed"
}

# The newest Debian cloud kernel, as the linux-image-cloud-amd64 meta package names it;
# its vmlinuz is extracted once into the cache.
fetch_kernel() {
    mkdir -p "$cache/debs"
    local name
    name=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9].*-cloud-amd64/ { print $2; exit }')
    if [ -z "$name" ]; then
        apt-get update -q >/dev/null || die "apt-get update failed"
        name=$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-[0-9].*-cloud-amd64/ { print $2; exit }')
    fi
    [ -n "$name" ] || die "cannot find the kernel that linux-image-cloud-amd64 depends on"
    name=${name%-unsigned}-unsigned
    KERNEL=$cache/vmlinuz-${name#linux-image-}
    [ -s "$KERNEL" ] && return 0
    say "downloading $name"
    (cd "$cache/debs" && apt-get download -q "$name" >/dev/null 2>&1) || die "apt-get download $name failed"
    local deb tmp
    local debs=("$cache/debs/${name}"_*.deb)
    deb=${debs[-1]}
    tmp=$(mktemp -d)
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards './boot/vmlinuz-*'
    mv "$tmp"/boot/vmlinuz-* "$KERNEL.part" && mv "$KERNEL.part" "$KERNEL"
    rm -rf "$tmp"
}

# numad from Debian's package, unpacked (not installed: it must not run on the host).
fetch_numad() {
    NUMAD=$cache/numad/usr/bin/numad
    [ -x "$NUMAD" ] && return 0
    mkdir -p "$cache/debs"
    (cd "$cache/debs" && apt-get download -q numad >/dev/null 2>&1) || die "apt-get download numad failed"
    rm -rf "$cache/numad"
    local debs=("$cache"/debs/numad_*.deb)
    dpkg-deb -x "${debs[-1]}" "$cache/numad"
    [ -x "$NUMAD" ] || die "numad package has no usr/bin/numad"
}

# A statically linked homenode: the musl target (pure Rust, no C dependencies).
build_homenode() {
    if ! rustup target list --installed 2>/dev/null | grep -qx "$musl"; then
        say "adding the $musl target"
        rustup target add "$musl" >/dev/null || die "rustup target add $musl failed"
    fi
    say "building homenode for $musl"
    (cd "$repo" && cargo build --release --locked -q -p homenode --target "$musl") || die "cargo build for $musl failed"
    HOMENODE=$cargo_target/$musl/release/homenode
    file -L "$HOMENODE" 2>/dev/null | grep -q 'static' || die "$HOMENODE is not statically linked"
    rustc --edition 2021 -O --target "$musl" -o "$cache/vmhelper" "$here/guest/vmhelper.rs" \
        || die "building the guest helper failed"
}

# The initramfs: busybox, homenode, the helper, numad with its libraries, the scenarios.
build_initramfs() {
    local root=$cache/root lib
    rm -rf "$root"
    mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,run,etc,lib,scenarios,var/lib,var/log,var/run}
    cp /bin/busybox "$root/bin/busybox"
    local applet
    for applet in $("$root/bin/busybox" --list); do
        [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
    done
    objcopy --strip-debug "$HOMENODE" "$root/bin/homenode"
    cp "$cache/vmhelper" "$root/bin/vmhelper"
    strip "$root/bin/vmhelper"
    ln -s vmhelper "$root/bin/memhog"
    ln -s vmhelper "$root/bin/lightjob"
    ln -s vmhelper "$root/bin/pinhog"
    ln -s vmhelper "$root/bin/selfhog"
    cp "$NUMAD" "$root/bin/numad"
    for lib in $(ldd "$NUMAD" | awk '/=>/ { print $3 } /^\t\// { print $1 }'); do
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
    cp "$here/guest/init" "$root/init"
    cp "$here/guest/hn.sh" "$root/lib/hn.sh"
    cp "$here"/guest/scenarios/*.sh "$root/scenarios/"
    chmod +x "$root/init"
    echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
    (cd "$root" && find . -print0 | sort -z | busybox cpio --null -o -H newc 2>/dev/null | gzip -1) >"$cache/initramfs.cpio.gz.part"
    mv "$cache/initramfs.cpio.gz.part" "$cache/initramfs.cpio.gz"
}

# KVM when it really works, else software emulation (TCG). /dev/kvm can exist without
# working: on a VM without nested virtualisation (no vmx/svm flag) guests hang at their
# first instructions, so a tiny guest is booted first. HOMENODE_VM_ACCEL=kvm|tcg skips this.
pick_accel() {
    ACCEL=${HOMENODE_VM_ACCEL:-auto}
    [ "$FORCE_TCG" = 1 ] && ACCEL=tcg
    case $ACCEL in kvm | tcg) return 0 ;; auto) ;; *) die "HOMENODE_VM_ACCEL must be kvm, tcg or auto" ;; esac
    ACCEL=tcg
    if ! [ -r /dev/kvm ] || ! [ -w /dev/kvm ]; then
        say "no usable /dev/kvm: software emulation (TCG)"
    elif ! grep -qwE 'vmx|svm' /proc/cpuinfo; then
        say "/dev/kvm exists but the CPU shows no vmx/svm flag (no nested virtualisation): software emulation (TCG)"
    elif timeout 30 qemu-system-x86_64 -accel kvm -cpu host -machine q35 -nographic -no-reboot -monitor none \
        -smp 1 -m 256M -kernel "$KERNEL" -initrd "$cache/initramfs.cpio.gz" \
        -append "console=ttyS0 quiet panic=-1 hn.scenario=probe" 2>&1 | grep -q '^HN-END probe'; then
        ACCEL=kvm
    else
        say "a KVM guest did not boot within 30 s: software emulation (TCG)"
    fi
}

# ---------------------------------------------------------------- booting

qemu_args() {
    local shape=$1 scenario=$2 opts=$3 n total=0 first
    shape_def "$shape"
    QEMU=(qemu-system-x86_64 -machine q35 -nographic -no-reboot -monitor none)
    if [ "$ACCEL" = kvm ]; then QEMU+=(-accel kvm -cpu host); else QEMU+=(-accel tcg -cpu max); fi
    for ((n = 0; n < NODES; n++)); do total=$((total + NODE_MIB[n])); done
    QEMU+=(-smp "$((NODES * CPUS_PER_NODE)),sockets=$NODES,cores=$CPUS_PER_NODE,threads=1" -m "${total}M")
    for ((n = 0; n < NODES; n++)); do
        first=$((n * CPUS_PER_NODE))
        QEMU+=(-object "memory-backend-ram,id=mem$n,size=${NODE_MIB[n]}M"
            -numa "node,nodeid=$n,cpus=$first-$((first + CPUS_PER_NODE - 1)),memdev=mem$n")
    done
    local i j row
    for ((i = 0; i < NODES; i++)); do
        read -r -a row <<<"${DIST[i]}"
        for ((j = 0; j < NODES; j++)); do
            [ "$i" -ne "$j" ] && QEMU+=(-numa "dist,src=$i,dst=$j,val=${row[j]}")
        done
    done
    QEMU+=(-kernel "$KERNEL" -initrd "$cache/initramfs.cpio.gz"
        -append "console=ttyS0 quiet loglevel=3 panic=-1 hn.scenario=$scenario hn.opts=$opts hn.shape=$shape")
}

# ---------------------------------------------------------------- results

# Host-side checks of scenario 1: the guest's `homenode topo` against the shape given to QEMU.
check_topo() {
    local log=$1 n want got line reported
    shape_def "$2"
    grep '^HN-TOPO ' "$log" | sed 's/^HN-TOPO //' >"$log.topo"
    want="host: $NODES nodes, $((NODES * CPUS_PER_NODE)) CPUs"
    got=$(head -n 1 "$log.topo")
    host_check "topo-size" "$want" "$got"
    for ((n = 0; n < NODES; n++)); do
        local first=$((n * CPUS_PER_NODE)) last=$(((n + 1) * CPUS_PER_NODE - 1))
        line=$(grep "^node $n " "$log.topo" || true)
        host_check "topo-node$n-cpus" "node $n (kernel node $n): CPUs $first-$last (kernel $first-$last)" "${line%%, memory*}"
        reported=$(echo "$line" | sed -n 's/.*memory \([0-9]*\) MiB.*/\1/p')
        # The report is the node's MemTotal: the given size less what firmware and the kernel
        # keep (memory-map holes, the kernel image, page structures: 64 bytes per 4 KiB page
        # alone is 1.6%, plus fixed-size reservations that weigh more on a small node).
        # Measured: 83-98% of the given size (83% on a 640 MiB node). Allowed: up to 15% or
        # 128 MiB below, whichever is more. The guest checks the exact match with the node's
        # meminfo.
        local slack=$((NODE_MIB[n] * 15 / 100))
        [ "$slack" -lt 128 ] && slack=128
        if [ -n "$reported" ] && [ "$reported" -le "${NODE_MIB[n]}" ] &&
            [ "$reported" -ge $((NODE_MIB[n] - slack)) ]; then
            RESULTS+=("HN-CHECK ok topo-node$n-memory $reported MiB of ${NODE_MIB[n]} MiB given (at most $slack MiB below)")
        else
            RESULTS+=("HN-CHECK FAIL topo-node$n-memory reported '${reported}' MiB, QEMU was given ${NODE_MIB[n]} MiB")
        fi
        want=$(echo "${DIST[n]}" | awk '{ $1 = $1; print }')
        got=$(awk '/^distances:/ { d = 1; next } d { print }' "$log.topo" | sed -n "$((n + 1))p" | awk '{ $1 = $1; print }')
        host_check "topo-distances-node$n" "$want" "$got"
    done
}
host_check() {
    if [ "$2" = "$3" ]; then
        RESULTS+=("HN-CHECK ok $1 $3")
    else
        RESULTS+=("HN-CHECK FAIL $1 expected '$2', got '$3'")
    fi
}

# One boot: SHAPE SCENARIO. Appends to RESULTS; returns non-zero when the scenario failed.
run_boot() {
    local shape=$1 scenario=$2 log start wall rc=0 fails oks
    log=$cache/logs/$scenario-$shape.log
    mkdir -p "$cache/logs"
    qemu_args "$shape" "$scenario" "$OPTS"
    say "$scenario on $shape ($ACCEL): booting"
    start=$(now)
    # The console's terminal escapes (SeaBIOS clears the screen) are dropped.
    timeout -k 10 "$boot_timeout" "${QEMU[@]}" </dev/null 2>&1 |
        sed -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1bc//g' -e 's/\r//g' >"$log" || rc=$?
    wall=$(since "$start")
    RESULTS=()
    if [ "$rc" -eq 124 ]; then
        RESULTS+=("HN-CHECK FAIL boot the guest did not power off within ${boot_timeout} s")
    elif ! grep -q "^HN-BEGIN $scenario" "$log"; then
        RESULTS+=("HN-CHECK FAIL boot no HN-BEGIN marker: the guest did not reach its scenario (qemu exit $rc)")
    elif ! grep -q "^HN-END $scenario rc=0" "$log"; then
        RESULTS+=("HN-CHECK FAIL end scenario script did not finish cleanly: $(grep '^HN-END' "$log" || echo 'no HN-END marker')")
    fi
    [ "$scenario" = topo ] && check_topo "$log" "$shape"
    mapfile -t -O "${#RESULTS[@]}" RESULTS < <(grep -E '^HN-(CHECK|FIGURE|ROW) ' "$log" || true)
    local boot
    boot=$(sed -n "s/^HN-BEGIN $scenario uptime=\([0-9.]*\).*/\1/p" "$log")
    RESULTS+=("HN-FIGURE boot_to_init_s ${boot:-?} s (guest uptime when the scenario started)")
    RESULTS+=("HN-FIGURE wall_s $wall s (whole boot, scenario and power-off)")
    local stall
    stall=$(guest_stall_s "$log")
    [ -n "$stall" ] && RESULTS+=("HN-FIGURE guest_stall_s $stall s (the longest soft lockup the guest's kernel reported: one of its CPUs did not schedule for that long; under TCG usually the host not running QEMU's threads, so this boot's timings are suspect)")
    oks=$(printf '%s\n' "${RESULTS[@]}" | grep -c '^HN-CHECK ok' || true)
    fails=$(printf '%s\n' "${RESULTS[@]}" | grep -c '^HN-CHECK FAIL' || true)
    echo "== $scenario on $shape: $oks checks passed, $fails failed, ${wall} s"
    printf '%s\n' "${RESULTS[@]}" | grep -v '^HN-ROW' | sed -e 's/^HN-CHECK ok /  ok    /' -e 's/^HN-CHECK FAIL /  FAIL  /' -e 's/^HN-FIGURE /  figure /'
    print_tables
    if [ "$fails" -gt 0 ] || [ "$oks" -eq 0 ] || [ "$VERBOSE" = 1 ]; then
        [ "$oks" -eq 0 ] && [ "$fails" -eq 0 ] && echo "  FAIL  no check ran"
        echo "  --- guest console ($log)"
        grep -v -E '^HN-(CHECK|FIGURE|ROW|TOPO) ' "$log" | tail -n 150 | sed 's/^/  | /'
    fi
    PASSED=$((PASSED + oks))
    FAILED=$((FAILED + fails))
    [ "$fails" -eq 0 ] && [ "$oks" -gt 0 ]
}

# The longest stall that the guest kernel's watchdog reported in console LOG, whole seconds
# ("watchdog: BUG: soft lockup - CPU#1 stuck for 71s!"); nothing when there was none. Under
# TCG on a loaded host it is usually the host not running the guest's virtual CPUs.
guest_stall_s() {
    sed -n 's/.*soft lockup - CPU#[0-9]* stuck for \([0-9]*\)s!.*/\1/p' "$1" | sort -n | tail -n 1
}

# HN-ROW TABLE CELLS... lines, printed as aligned tables, one per TABLE name.
print_tables() {
    local t
    for t in $(printf '%s\n' "${RESULTS[@]}" | awk '$1 == "HN-ROW" { print $2 }' | sort -u); do
        echo "  table $t:"
        printf '%s\n' "${RESULTS[@]}" | awk -v t="$t" '$1 == "HN-ROW" && $2 == t { $1 = ""; $2 = ""; sub(/^ +/, ""); print }' |
            column -t | sed 's/^/    /'
    done
}

# ---------------------------------------------------------------- main

SHELL_MODE=0 SHELL_SHAPE=4n FORCE_TCG=0 VERBOSE=0 NO_BUILD=0 OPTS=
SCENARIOS=()
while [ $# -gt 0 ]; do
    case $1 in
        -h | --help) usage; exit 0 ;;
        --list)
            for s in "${ALL_SCENARIOS[@]}"; do echo "$s: shapes ${SCENARIO_SHAPES[$s]}"; done
            for s in 2n 4n; do shape_def "$s"; echo "shape $s: $NODES nodes x $CPUS_PER_NODE CPUs, MiB per node ${NODE_MIB[*]}, distances ${DIST[*]}"; done
            exit 0 ;;
        --shell)
            SHELL_MODE=1
            if [ $# -gt 1 ] && [[ $2 =~ ^[0-9]+n$ ]]; then SHELL_SHAPE=$2; shift; fi ;;
        --tcg) FORCE_TCG=1 ;;
        --verbose | -v) VERBOSE=1 ;;
        --no-build) NO_BUILD=1 ;;
        --opts) OPTS=$2; shift ;;
        -*) die "unknown option $1 (see --help)" ;;
        *)
            [ -n "${SCENARIO_SHAPES[$1]:-}" ] || die "unknown scenario $1 (known: ${ALL_SCENARIOS[*]})"
            SCENARIOS+=("$1") ;;
    esac
    shift
done
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=("${ALL_SCENARIOS[@]}")

rig_start=$(now)
need_apt qemu-system-x86 busybox-static binutils bsdextrautils file
fetch_kernel
fetch_numad
if [ "$NO_BUILD" = 1 ] && [ -s "$cache/initramfs.cpio.gz" ]; then
    say "reusing $cache/initramfs.cpio.gz"
else
    build_homenode
    build_initramfs
fi
pick_accel
say "kernel $(basename "$KERNEL"), accelerator $ACCEL, prepared in $(since "$rig_start") s"

if [ "$SHELL_MODE" = 1 ]; then
    qemu_args "$SHELL_SHAPE" shell ""
    exec "${QEMU[@]}"
fi

# Under TCG eight virtual CPUs share the host's cores, so a guest's timing (how busy its idle
# CPUs look, how long an interval takes) varies from boot to boot; a scenario that fails is
# booted once more there and fails only if both boots fail. Both boots are printed, and a pass
# on the second boot is listed as flaky. HOMENODE_VM_RETRIES overrides (0: no second boot).
if [ "$ACCEL" = tcg ]; then retries=${HOMENODE_VM_RETRIES:-1}; else retries=${HOMENODE_VM_RETRIES:-0}; fi
PASSED=0 FAILED=0
failed_boots=()
flaky_boots=()
for s in "${SCENARIOS[@]}"; do
    for shape in ${SCENARIO_SHAPES[$s]}; do
        attempt=0
        until run_boot "$shape" "$s"; do
            attempt=$((attempt + 1))
            if [ "$attempt" -gt "$retries" ]; then
                failed_boots+=("$s/$shape")
                break
            fi
            say "$s on $shape failed; booting it once more ($ACCEL timing varies, see docs/VM.md)"
        done
        if [ "$attempt" -gt 0 ] && [ "$attempt" -le "$retries" ]; then
            flaky_boots+=("$s/$shape")
        fi
    done
done
echo "vm rig: ${#SCENARIOS[@]} scenarios, accelerator $ACCEL, total $(since "$rig_start") s"
if [ ${#flaky_boots[@]} -gt 0 ]; then
    echo "vm rig: passed only on the second boot (flaky): ${flaky_boots[*]}"
fi
if [ ${#failed_boots[@]} -gt 0 ]; then
    echo "vm rig: failed: ${failed_boots[*]}"
fi
echo "vm: $PASSED passed, $FAILED failed"
[ ${#failed_boots[@]} -eq 0 ]
