//! The defining behaviour of each historical scheduler (B, C, D, aa, pmqs, linux-2.6-numa)
//! in a small scenario, observed through a probe that records every balancing move.

use crate::common::*;
use crate::probe::{Call, Log, Probe};
use sim::Sim;
use sim::numa_test::figures;
use sim::program::Workload;
use sim::workload::{numa_test, parse_workload};
use std::sync::Arc;

/// `count` CPU-bound processes started together on CPU 0 (`ms` of work each), optionally
/// sleeping now and then so that wake-up placement matters.
fn burst(count: u32, ms: u32, sleeps: bool) -> Workload {
    let sleep = if sleeps {
        r#"{ sleep = { ms = 3, jitter = 0.5 } },"#
    } else {
        ""
    };
    let text = format!(
        r#"
name = "burst"
[[program]]
name = "spin"
job = true
phase = [{{ loop = {{ count = 10, body = [ {{ compute = {{ cycles = {} }} }}, {sleep} ] }} }}]
[[launch]]
program = "spin"
count = {count}
cpu = 0
"#,
        u64::from(ms) * 100_000
    );
    parse_workload(&text, "burst.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn probe_run(machine_spec: &str, w: &Workload, sched_spec: &str, seed: u64) -> (Vec<Call>, Sim) {
    let topo = machine(machine_spec);
    let (probe, log): (Probe, Log) = Probe::new(scheduler(sched_spec, &topo));
    let mut sim = Sim::new(topo, Arc::new(w.clone()), Box::new(probe), seed);
    while sim.step().unwrap_or_else(|e| panic!("{sched_spec}: {e}")) {}
    let calls = log.lock().expect("log").clone();
    (calls, sim)
}

fn cross_node_moves(sim: &Sim, calls: &[Call]) -> usize {
    calls
        .iter()
        .flat_map(|c| &c.moves)
        .filter(|m| sim.k.node_of(m.from) != sim.k.node_of(m.to))
        .count()
}

#[test]
fn o1_steal1_never_moves_two_tasks_in_one_call() {
    for seed in 1..=3 {
        let (calls, sim) = probe_run(
            "nodes=2,cpus-per-node=4",
            &burst(24, 200, true),
            "o1-steal1",
            seed,
        );
        let most = calls.iter().map(|c| c.moves.len()).max().unwrap_or(0);
        assert_eq!(most, 1, "seed {seed}: a call moved {most} tasks");
        // It still spreads the load: every CPU ran something.
        assert!(sim.k.rqs.iter().all(|rq| rq.busy_ns > 0), "seed {seed}");
    }
    // max_pull is an option: raising it lifts the limit (the A scheduler's busy passes).
    let topo = machine(SMALL);
    let s = scheduler("o1-steal1:max_pull=3", &topo);
    assert!(s.options().contains(&("max_pull".into(), "3".into())));
}

#[test]
fn aa_pulls_remote_only_when_its_node_has_nothing_waiting() {
    let mut remote = 0;
    for seed in 1..=3 {
        let (calls, sim) = probe_run("nodes=2,cpus-per-node=2", &burst(9, 100, true), "aa", seed);
        for c in &calls {
            for m in &c.moves {
                let to = sim.k.node_of(m.to);
                if sim.k.node_of(m.from) != to {
                    remote += 1;
                    assert_eq!(
                        c.waiting_before[to], 0,
                        "seed {seed} t={}: task {} pulled to node {to} while {} waited there",
                        c.at, m.task, c.waiting_before[to]
                    );
                    assert!(
                        c.idle.is_some_and(|i| i.is_idle()),
                        "a busy CPU pulled remote"
                    );
                    assert_eq!(c.moves.len(), 1, "remote pull moves one task");
                }
            }
        }
    }
    assert!(remote > 0, "the scenario never pulled remotely");
}

#[test]
fn pmqs_with_balancer_off_never_moves_a_task_between_pools() {
    let w = burst(8, 3000, false);
    let (calls, sim) = probe_run(SMALL, &w, "pmqs:balance_period=off", 1);
    assert_eq!(cross_node_moves(&sim, &calls), 0);
    assert!(calls.iter().all(|c| c.cpu.is_some()), "no timer when off");
    // The jobs never wake elsewhere (they do not sleep), so node 1 never ran anything.
    assert!(sim.k.tasks.iter().all(|t| t.node_user_ns()[1] == 0.0));
    // With the 500 ms balancer, moves between pools happen, and only through the timer,
    // from the most to the least loaded pool.
    let (calls, sim) = probe_run(SMALL, &w, "pmqs", 1);
    let timer_moves: usize = calls
        .iter()
        .filter(|c| c.cpu.is_none())
        .map(|c| c.moves.len())
        .sum();
    assert!(timer_moves > 0, "the balancer moved nothing");
    for c in calls.iter().filter(|c| c.cpu.is_some()) {
        for m in &c.moves {
            assert_eq!(sim.k.node_of(m.from), sim.k.node_of(m.to), "{c:?}");
        }
    }
    for c in calls.iter().filter(|c| c.cpu.is_none()) {
        assert_eq!(c.at % 500_000_000, 0, "balancer runs on its period");
    }
}

#[test]
fn pool_never_steals_remotely_before_pool_delay() {
    // The pooling patch waits the delay from the first pass that sees the remote imbalance
    // (here at once: all jobs start on CPU 0), not scaled by distance.
    let w = burst(8, 300, false);
    for delay_ms in [0u64, 50, 150] {
        let spec = format!("pool:pool_delay={delay_ms}ms,pool_delay_busy={delay_ms}ms");
        let (calls, sim) = probe_run(SMALL, &w, &spec, 1);
        let first = calls
            .iter()
            .find(|c| {
                c.moves
                    .iter()
                    .any(|m| sim.k.node_of(m.from) != sim.k.node_of(m.to))
            })
            .map(|c| c.at);
        let first = first.unwrap_or_else(|| panic!("{spec}: never stole remotely"));
        assert!(
            first >= delay_ms * 1_000_000,
            "{spec}: first remote steal at {first} ns"
        );
    }
}

#[test]
fn pool_initial_lb_places_at_exec_only_when_on() {
    let topo = machine(SMALL);
    let w = numa_test(&small_params(4, 20_000, 5, false));
    for (spec, spread) in [("pool:initial_lb=on", true), ("pool", false)] {
        let f = figures(&run(&topo, &w, spec, 1), 2);
        let on_node1 = f.jobs.iter().filter(|j| j.isched == Some(1)).count();
        assert_eq!(
            on_node1 == 2,
            spread,
            "{spec}: {on_node1} jobs started on node 1"
        );
    }
}

#[test]
fn simple_numa_and_linux26_exec_to_the_least_loaded_node() {
    let topo = machine("nodes=4,cpus-per-node=2");
    // Jobs long enough to be all alive when the last one execs.
    let w = numa_test(&small_params(8, 50_000, 100, false));
    for spec in ["simple-numa", "linux-2.6-numa"] {
        let f = figures(&run(&topo, &w, spec, 1), 4);
        let mut per_node = [0; 4];
        for j in &f.jobs {
            per_node[j.isched.expect("ran")] += 1;
        }
        // simple-numa always balances at exec: two jobs per node. 2.6.0 leaves a task on
        // its CPU while that CPU holds at most two runnable tasks, so the first job stays
        // with the dispatcher; the others still fill every node.
        let ok = if spec == "simple-numa" {
            per_node.iter().all(|&n| n == 2)
        } else {
            per_node.iter().all(|&n| (1..=3).contains(&n))
        };
        assert!(ok, "{spec}: jobs started per node {per_node:?}");
    }
}

#[test]
fn linux26_busy_cpus_cross_nodes_only_on_the_node_interval() {
    // Busy CPUs balance inside the node every 200 ms and across nodes every 400 ms; a CPU
    // running out of work never looks across nodes.
    // The burst is exec'ed on CPU 0; `exec_stay=100` keeps exec from spreading it, so
    // only balancing can.
    let w = burst(12, 400, true);
    let spec = "linux-2.6-numa:exec_stay=100";
    let (calls, sim) = probe_run("nodes=2,cpus-per-node=2", &w, spec, 1);
    for c in &calls {
        for m in &c.moves {
            if sim.k.node_of(m.from) != sim.k.node_of(m.to) {
                assert_ne!(c.idle, Some(sim::sched::IdleType::NewIdle), "{c:?}");
            }
        }
    }
    assert!(cross_node_moves(&sim, &calls) > 0);
}

#[test]
fn new_scheduler_options_are_checked() {
    let topo = machine(SMALL);
    for (spec, want) in [
        ("pool:pool_delay=fast", "pool_delay"),
        ("pool:initial_lb=maybe", "on/off"),
        ("pmqs:balance_period=soon", "off"),
        ("aa:home_bonus=1", "no option `home_bonus`"),
        ("aa:base=cfs", "`cfs` is not one of goodness, o1"),
        ("pmqs:proc_change_penalty=-1", "proc_change_penalty"),
        ("aa:max_sleep_avg=1s", "no option `max_sleep_avg`"),
        ("linux-2.6-numa:node_threshold=x", "node_threshold"),
    ] {
        let e = sim::sched::build(&sim::sched::SchedSpec::parse(spec).expect("spec"), &topo)
            .err()
            .unwrap_or_else(|| panic!("{spec} accepted"))
            .to_string();
        assert!(e.contains(want), "{spec}: {e}");
        assert_eq!(e.lines().count(), 1);
    }
}

/// One CPU. Two CPU hogs take turns (151 ms slices) until, at 2.3 s, four interactive
/// tasks wake (they slept 2.3 s: full sleep credit) that keep the CPU busy (1 ms of work,
/// 3 ms asleep, each). At that moment the first hog is in the expired array and the second
/// one is preempted in the active array. The interactive tasks wake into the active array and
/// stay there when their slices run out, so without a limit neither hog runs again until they
/// are done. 2.5's `EXPIRED_STARVING` sends them to the expired array once the first expired
/// task has waited `STARVATION_LIMIT` (2 s) times the runqueue length (6): from 14.3 s on, so
/// the preempted hog gets the CPU back and the arrays switch. (Hogs that wait in the active
/// array behind interactive tasks of better priority still wait: the limit only helps the
/// expired array, as in the kernel.)
fn starvation_run(limit: &str) -> (f64, f64, u64) {
    let topo = machine("nodes=1,cpus-per-node=1");
    let ms = (topo.cpu_model.freq_mhz * 1e3) as u64;
    let text = format!(
        r#"
name = "starve"
[[program]]
name = "hog"
job = true
phase = [{{ compute = {{ cycles = {hog} }} }}]
[[program]]
name = "chatty"
phase = [
  {{ sleep = {{ ms = 2300 }} }},
  {{ loop = {{ count = 6000, body = [ {{ compute = {{ cycles = {ms} }} }}, {{ sleep = {{ ms = 3 }} }} ] }} }},
]
[[launch]]
program = "hog"
count = 2
[[launch]]
program = "chatty"
count = 4
"#,
        hog = 2 * 1000 * ms
    );
    let w = parse_workload(&text, "starve.toml").unwrap_or_else(|e| panic!("{e}"));
    let r = run(&topo, &w, &format!("o1:starvation_limit={limit}"), 1);
    let hogs_end = r
        .tasks
        .iter()
        .filter(|t| t.program == "hog")
        .map(|t| t.exited)
        .max()
        .expect("hog");
    let chatty_end = r
        .tasks
        .iter()
        .filter(|t| t.program == "chatty")
        .map(|t| t.exited)
        .max()
        .expect("chatty");
    (
        hogs_end as f64 / 1e9,
        chatty_end as f64 / 1e9,
        r.counters.starvation_expiries,
    )
}

#[test]
fn o1_starvation_limit_sends_interactive_tasks_to_the_expired_array() {
    let (hogs_off, chatty_off, n_off) = starvation_run("0");
    assert_eq!(n_off, 0);
    // No limit: the hogs get no CPU from 2.3 s until the interactive tasks are done.
    assert!(
        hogs_off > chatty_off + 1.0,
        "hogs ended at {hogs_off:.3} s, interactive tasks at {chatty_off:.3} s"
    );
    let (hogs_on, chatty_on, n_on) = starvation_run("2s");
    // The 2.5 limit: an interactive task goes to the expired array, the preempted hog runs in
    // the gaps the other three leave and finishes its slice (about 116 ms), and the arrays
    // switch, before they are done.
    assert!(n_on >= 1, "no starvation expiry");
    // The machine is always busy, so the last hog ends at the same time either way; what the
    // limit changes is who runs meanwhile: the interactive tasks lose CPU to the hogs.
    assert!(
        chatty_on > chatty_off + 0.1 && (hogs_on - hogs_off).abs() < 1e-6,
        "with the limit the interactive tasks ended at {chatty_on:.3} s (without: {chatty_off:.3} s), the hogs at {hogs_on:.3} s (without: {hogs_off:.3} s)"
    );
}

/// One CPU, two CPU hogs (`hog_ms` of work each) and, if `sleeper_ms` > 0, a task that
/// sleeps 1 s and then computes `sleeper_ms`. Returns the run and the sleeper's exit (s).
fn goodness_run(sched: &str, hog_ms: u64, sleeper_ms: u64) -> (sim::RunResult, f64) {
    let topo = machine("nodes=1,cpus-per-node=1");
    let ms = (topo.cpu_model.freq_mhz * 1e3) as u64;
    // The sleeper is launched first, so it starts its sleep at once.
    let mut text = String::from("name = \"goodness\"\n");
    if sleeper_ms > 0 {
        text += &format!(
            r#"
[[program]]
name = "sleeper"
phase = [{{ sleep = {{ ms = 1000 }} }}, {{ compute = {{ cycles = {c} }} }}]
[[launch]]
program = "sleeper"
count = 1
"#,
            c = sleeper_ms * ms
        );
    }
    text += &format!(
        r#"
[[program]]
name = "hog"
job = true
phase = [{{ compute = {{ cycles = {hog} }} }}]
[[launch]]
program = "hog"
count = 2
"#,
        hog = hog_ms * ms
    );
    let w = parse_workload(&text, "goodness.toml").unwrap_or_else(|e| panic!("{e}"));
    let r = run(&topo, &w, sched, 1);
    let sleeper = r
        .tasks
        .iter()
        .find(|t| t.program == "sleeper")
        .map_or(0.0, |t| t.exited as f64 / 1e9);
    (r, sleeper)
}

/// The 2.4 base's slice is `NICE_TO_TICKS(0)` = 41 ticks of HZ = 1024 (40.04 ms): two hogs of
/// 1 s each on one CPU switch about 2 s / 40 ms = 50 times; on the O(1) base (151 ms slices)
/// about 13 times.
#[test]
fn the_2_4_base_gives_hogs_41_tick_slices() {
    for sched in ["aa", "pmqs"] {
        let (r, _) = goodness_run(sched, 1000, 0);
        let n = r.counters.context_switches;
        assert!((48..=53).contains(&n), "{sched}: {n} switches");
        let (r, _) = goodness_run(&format!("{sched}:base=o1"), 1000, 0);
        let n = r.counters.context_switches;
        assert!((12..=16).contains(&n), "{sched}:base=o1: {n} switches");
    }
}

/// 2.4 recalculates every counter, a sleeper's too (`counter / 2 + 41`), each time the
/// runnable tasks have used theirs up: after 1 s asleep beside two hogs (about 12
/// recalculations) the sleeper has close to 82 ticks (80 ms). It wakes with far more goodness
/// than the running hog (at most 41 ticks), preempts it, and does 75 ms of work in one go.
/// Without the credit it would run 40 ms and then wait for both hogs' slices.
#[test]
fn a_2_4_sleeper_wakes_with_its_recalculated_counter_and_preempts() {
    let (_, end) = goodness_run("aa", 3000, 75);
    let took_ms = (end - 1.0) * 1e3;
    assert!(
        (74.9..77.0).contains(&took_ms),
        "the sleeper took {took_ms:.2} ms after waking"
    );
    // 85 ms is more than the credited counter: the sleeper is interrupted once.
    let (_, end) = goodness_run("aa", 3000, 85);
    let took_ms = (end - 1.0) * 1e3;
    assert!(took_ms > 85.0 + 40.0, "the sleeper took {took_ms:.2} ms");
}

/// The pooling patch (Focht, October 2002) and the node-affine one on top of it: a balancing
/// pass moves at most one task, and under E another node's CPU never takes a task away from
/// its homenode (its steal weight loses 100 there; `sched::pooling` tests the weights).
#[test]
fn pooling_moves_one_task_per_pass_and_node_affine_keeps_tasks_home() {
    for sched in ["pool", "node-affine-static", "node-affine-dynamic"] {
        let mut remote = 0;
        for seed in 1..=3 {
            let (calls, sim) =
                probe_run("nodes=2,cpus-per-node=2", &burst(9, 100, true), sched, seed);
            for c in &calls {
                assert!(c.moves.len() <= 1, "{sched} seed {seed}: {c:?}");
                for m in &c.moves {
                    let from = sim.k.node_of(m.from);
                    if from == sim.k.node_of(m.to) {
                        continue;
                    }
                    remote += 1;
                    if sched == "node-affine-static" {
                        assert_ne!(
                            sim.k.tasks[m.task].home_node,
                            Some(from),
                            "seed {seed} t={}: task {} taken from its homenode",
                            c.at,
                            m.task
                        );
                    }
                }
            }
        }
        // D and F start every job on CPU 0 and must spread them; E places them at exec.
        if sched != "node-affine-static" {
            assert!(remote > 0, "{sched}: never stole remotely");
        }
    }
}
