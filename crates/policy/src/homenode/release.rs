//! Step 1, *release*: a homed process that used less than `min_cpu` for `release_after_s`
//! loses its home and gets its original CPUs back, and so does one whose home fell outside its
//! allowed nodes when it is too small for a new one. Its load is accounted where it runs from
//! then on, so the later steps see the node it leaves as lighter.

use super::{Decision, HomenodePolicy, PidState, comm};
use crate::action::Action;
use crate::common::fmt_nodes;

impl HomenodePolicy {
    /// Releases the homes of processes idle for long (and invalid homes of small processes).
    pub(super) fn release(&mut self, d: &mut Decision<'_, '_>) {
        let (topo, now) = (d.snap.topo, d.snap.now_ns);
        for (i, p) in d.procs.iter().enumerate() {
            if p.leave_alone || p.home.is_empty() {
                continue;
            }
            if !p.home_valid && !self.significant(p) {
                d.touched[i] = true;
                d.actions.push(Action::ClearHome {
                    pid: p.pid,
                    start_time: p.start_time,
                    reason: format!(
                        "release: the home {} of pid {} ({}) is outside its allowed nodes and it is too small for a new one",
                        fmt_nodes(&p.home),
                        p.pid,
                        comm(d.snap, p)
                    ),
                });
                continue;
            }
            let st = self.procs.get_mut(&p.pid).expect("state made above");
            let idle_s = now.saturating_sub(st.last_busy_ns) as f64 / 1e9;
            if idle_s >= self.cfg.release_after_s {
                if let Some(h) = d.homes[i].take() {
                    d.model.apply(topo, p, Some(&h), -1.0);
                    d.model.apply(topo, p, None, 1.0);
                }
                d.touched[i] = true;
                *st = PidState {
                    start_time: p.start_time,
                    last_busy_ns: st.last_busy_ns,
                    ..Default::default()
                };
                d.actions.push(Action::ClearHome {
                    pid: p.pid,
                    start_time: p.start_time,
                    reason: format!(
                        "release: pid {} ({}) used {:.2} CPUs, below {:.2}, for {idle_s:.0} s; it gets its original CPUs back",
                        p.pid,
                        comm(d.snap, p),
                        p.cpu,
                        self.cfg.min_cpu
                    ),
                });
            }
        }
    }
}
