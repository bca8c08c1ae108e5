//! The loop: intervals on the clock, first looks between them, reloads on SIGHUP, and the
//! overrun and failure rules that end it.

use super::*;

/// What [`run`] did.
#[derive(Clone, Debug, Default)]
pub struct RunSummary {
    pub intervals: u64,
    /// Loop-thread CPU time per interval, seconds.
    pub cpu_per_interval_s: Vec<f64>,
    /// Intervals whose work took longer than the period.
    pub overruns: u64,
    /// First looks taken between intervals, those that found a new candidate, and the
    /// loop-thread CPU time of each look, seconds.
    pub looks: u64,
    pub looks_placing: u64,
    pub look_cpu_s: Vec<f64>,
    pub restore: RestoreReport,
}

/// Why a configuration could not be read again: whatever the caller's reader reports (the
/// CLI's errors carry the file, key and the command-line flag).
pub type ReadError = Box<dyn std::error::Error + Send + Sync>;

/// A way to take a new configuration while running: `requested` is set (by a SIGHUP
/// handler), and `read` reads the configuration again (the file and the command line), or
/// says why it cannot.
pub struct Reload<'a> {
    pub requested: &'a AtomicBool,
    pub read: &'a dyn Fn() -> Result<DaemonConfig, ReadError>,
}

/// An error and its causes on one line, `outer: inner: ...`.
fn one_line_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}

/// The whole daemon: start, serve the status socket (and metrics), run intervals until `stop`
/// is set (or `max_intervals` have run), then restore. An interval that fails is logged and
/// the loop goes on; ten failures in a row stop the daemon (after restoring).
pub fn run(
    cfg: DaemonConfig,
    stop: &AtomicBool,
    max_intervals: Option<u64>,
) -> Result<RunSummary, DaemonError> {
    run_reloading(cfg, stop, max_intervals, None)
}

/// [`run`], taking a new configuration between intervals whenever `reload` asks.
pub fn run_reloading(
    cfg: DaemonConfig,
    stop: &AtomicBool,
    max_intervals: Option<u64>,
    reload: Option<Reload<'_>>,
) -> Result<RunSummary, DaemonError> {
    let mut d = Daemon::start(cfg)?;
    let _status = status::StatusServer::start_with(&d.cfg.socket, d.status(), Some(d.control()))?;
    let _metrics = match d.cfg.metrics {
        Some(addr) => Some(
            metrics::MetricsServer::start(addr, d.status())
                .map_err(|source| DaemonError::Metrics { addr, source })?,
        ),
        None => None,
    };
    log_start(&d);
    let mut summary = RunSummary::default();
    let mut failures: u32 = 0;
    let mut last_error = String::new();
    let mut next = Instant::now();
    let mut last_overrun_warning: Option<Instant> = None;
    while !stop.load(Ordering::Relaxed) {
        if max_intervals.is_some_and(|m| summary.intervals >= m) {
            break;
        }
        let period = Duration::from_secs_f64(d.cfg.placement.interval_s);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| d.interval()));
        match r {
            Ok(Ok(rep)) => {
                failures = 0;
                summary.cpu_per_interval_s.push(rep.cpu_s);
                if let Some(note) = overrun_note(&rep, period.as_secs_f64()) {
                    summary.overruns += 1;
                    // Said at most once a minute: a host too slow for the interval would
                    // otherwise fill the log.
                    if last_overrun_warning.is_none_or(|t: Instant| t.elapsed() >= OVERRUN_QUIET) {
                        tracing::warn!("{note}");
                        last_overrun_warning = Some(Instant::now());
                    } else {
                        tracing::debug!("{note}");
                    }
                }
            }
            Ok(Err(e)) => {
                failures += 1;
                tracing::error!("interval failed ({failures} in a row): {e}");
                last_error = e.to_string();
            }
            Err(_) => {
                failures = MAX_FAILED_INTERVALS;
                tracing::error!("interval panicked; restoring and stopping");
                last_error = "an interval panicked".into();
            }
        }
        summary.intervals += 1;
        if failures >= MAX_FAILED_INTERVALS {
            break;
        }
        next += period;
        let mut next_look = d.first_look_every().map(|e| Instant::now() + e);
        while !stop.load(Ordering::Relaxed) {
            if let Some(at) = next_look.filter(|&at| at < next && Instant::now() >= at) {
                if let Err(why) = take_look(&mut d, &mut summary) {
                    failures = MAX_FAILED_INTERVALS;
                    last_error = why.to_string();
                    break;
                }
                // Behind schedule: the next look a period from now, no catching up.
                next_look = d
                    .first_look_every()
                    .map(|e| (at + e).max(Instant::now() + e / 2));
            }
            if let Some(r) = &reload {
                if r.requested.swap(false, Ordering::Relaxed) {
                    take_new_config(&mut d, r);
                    // A shorter interval takes effect now, not after the old one's wait.
                    let new_period = Duration::from_secs_f64(d.cfg.placement.interval_s);
                    next = next.min(Instant::now() + new_period);
                }
            }
            let now = Instant::now();
            if now >= next {
                // Behind schedule (a slow interval, a suspended host): do not catch up.
                if now - next > period {
                    next = now;
                }
                break;
            }
            let until = next_look.filter(|&at| at < next).unwrap_or(next);
            std::thread::sleep(
                until
                    .saturating_duration_since(now)
                    .min(Duration::from_millis(50)),
            );
        }
        if failures >= MAX_FAILED_INTERVALS {
            break;
        }
    }
    summary.restore = d.shutdown()?;
    if failures >= MAX_FAILED_INTERVALS {
        return Err(DaemonError::GaveUp {
            failures,
            last: last_error,
        });
    }
    Ok(summary)
}

/// The daemon's first line: version, policy, interval, nodes, and whether it is a dry run.
fn log_start(d: &Daemon) {
    tracing::info!(
        "homenode {}: policy {}, interval {} s{}, {}{}{}",
        env!("CARGO_PKG_VERSION"),
        d.cfg.policy,
        d.cfg.placement.interval_s,
        d.first_look_every()
            .map(|e| format!(" (first looks every {} s)", e.as_secs_f64()))
            .unwrap_or_default(),
        topo::count(d.host.nr_nodes(), "node"),
        if d.host.fake { " (fake NUMA)" } else { "" },
        if d.cfg.dry_run {
            ", dry run: nothing will be changed (the policy goes on as if its homes and \
             slices had been set; its memory moves, never made, are asked again at every \
             interval)"
        } else {
            ""
        },
    );
}

/// One first look between intervals, counted in `summary`. A look that fails is logged and
/// left to the next interval; one that panics is an error (the caller restores and stops).
/// A first look panicked: the loop restores everything and stops.
#[derive(Debug, thiserror::Error)]
#[error("a first look panicked")]
struct LookPanicked;

fn take_look(d: &mut Daemon, summary: &mut RunSummary) -> Result<(), LookPanicked> {
    let cpu0 = thread_cpu_s();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| d.look())) {
        Ok(Ok(found)) => {
            summary.looks += 1;
            summary.looks_placing += u64::from(found.is_some());
            summary.look_cpu_s.push((thread_cpu_s() - cpu0).max(0.0));
        }
        // The next interval reads everything again.
        Ok(Err(e)) => tracing::warn!("first look failed: {e}"),
        Err(_) => {
            tracing::error!("a first look panicked; restoring and stopping");
            return Err(LookPanicked);
        }
    }
    Ok(())
}

/// Least time between two warnings that an interval overran its period.
const OVERRUN_QUIET: Duration = Duration::from_secs(60);

/// When an interval's work took longer than its period, one line saying where the time went.
pub fn overrun_note(rep: &IntervalReport, period_s: f64) -> Option<String> {
    if rep.wall_s <= period_s {
        return None;
    }
    Some(format!(
        "an interval took {:.1} s, more than its {period_s} s period: sampling /proc {:.1} s, \
         memory moves {:.1} s, the rest {:.1} s",
        rep.wall_s,
        rep.sample_wall_s,
        rep.move_wall_s,
        (rep.wall_s - rep.sample_wall_s - rep.move_wall_s).max(0.0)
    ))
}

/// Times a homed process may widen its own mask again before it is left alone.
pub const MAX_WIDENINGS: u32 = 3;

/// Failed intervals in a row after which the daemon restores and stops.
pub const MAX_FAILED_INTERVALS: u32 = 10;

/// Reads the configuration again and takes it, logging what changed; on any error the
/// running configuration stays.
fn take_new_config(d: &mut Daemon, r: &Reload<'_>) {
    let new = match (r.read)() {
        Ok(c) => c,
        Err(e) => {
            let e = one_line_chain(e.as_ref());
            tracing::error!("reload refused, the running configuration stays: {e}");
            return;
        }
    };
    match d.reload(new) {
        Ok(rep) => {
            if rep.applied.is_empty() && rep.need_restart.is_empty() {
                tracing::info!("reloaded: no change");
            }
            for a in &rep.applied {
                tracing::info!("reloaded: {a}");
            }
            for n in &rep.need_restart {
                tracing::warn!("reload: {n}; this key needs a restart, the running value stays");
            }
        }
        Err(e) => tracing::error!("reload refused, the running configuration stays: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_within_its_period_says_nothing() {
        let rep = IntervalReport {
            wall_s: 1.9,
            ..IntervalReport::default()
        };
        assert_eq!(overrun_note(&rep, 2.0), None);
    }

    #[test]
    fn an_overrun_says_where_the_time_went() {
        let rep = IntervalReport {
            wall_s: 7.4,
            sample_wall_s: 0.3,
            move_wall_s: 6.9,
            ..IntervalReport::default()
        };
        let note = overrun_note(&rep, 2.0).expect("overran");
        assert!(
            note.contains("took 7.4 s, more than its 2 s period"),
            "{note}"
        );
        assert!(note.contains("memory moves 6.9 s"), "{note}");
        assert!(note.contains("the rest 0.2 s"), "{note}");
    }
}
