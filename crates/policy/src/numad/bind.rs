//! numad's binding of one process: `SetHome` with the CPUs of the chosen nodes, then all of its
//! memory outside them migrated at once (`MoveMemory`, no rate limit), largest source first to
//! the chosen node holding the least of it, one migration per source node, as numad's
//! `migrate_pages` calls do. The model remembers when and where it bound the process, so
//! re-evaluation waits `reeval_delay_s`.

use topo::NodeId;

use super::NumadPolicy;
use super::pick::{Pick, Request};
use crate::action::Action;
use crate::common::{MIB, Machine, Proc, fmt_bytes, fmt_home, fmt_nodes, pct};
use crate::snapshot::Snapshot;

impl NumadPolicy {
    /// Binds `p` (bound to `bound` before, empty when not) as `pick` says: the actions.
    pub(super) fn bind(
        &mut self,
        snap: &Snapshot<'_>,
        m: &Machine,
        p: &Proc,
        bound: &[NodeId],
        req: &Request,
        pick: Pick,
    ) -> Vec<Action> {
        let comm = snap.processes[p.idx].comm.as_str();
        let nodes = pick.nodes;
        let local: u64 = nodes.iter().map(|&n| p.bytes[n]).sum();
        let was = if bound.is_empty() {
            String::new()
        } else {
            format!(
                "re-bind from {} ({} of its memory local); ",
                fmt_home(bound),
                pct(local, p.rss)
            )
        };
        let mut actions = vec![Action::SetHome {
            pid: p.pid,
            start_time: p.start_time,
            cpus: p.cpus_of(snap.topo, &nodes, &snap.processes[p.idx].allowed_cpus),
            reason: format!(
                "numad: {was}bind pid {} ({comm}) to {}: it asks for {:.1} CPUs and {} ({:.1} CPUs and {} used, at {}% target utilisation); the fewest nodes around node {} that fit",
                p.pid,
                fmt_home(&nodes),
                req.cpu,
                fmt_bytes((req.mem_mib * MIB as f64) as u64),
                self.cpu_used(p.pid),
                fmt_bytes(p.rss),
                self.cfg.target_utilization_pct,
                pick.best
            ),
            nodes: nodes.clone(),
        }];
        actions.extend(migrate_all(m, p, comm, &nodes));
        if let Some(st) = self.procs.get_mut(&p.pid) {
            st.bind_ns = Some(snap.now_ns);
            st.nodes = nodes;
        }
        actions
    }
}

/// Migrates everything outside `nodes`: largest source to the set node holding the least of
/// the process, repeatedly (as numad does, one migrate_pages per source).
fn migrate_all(m: &Machine, p: &Proc, comm: &str, nodes: &[NodeId]) -> Vec<Action> {
    let mut actions = Vec::new();
    let mut own = p.bytes.clone();
    let mut prev_from: Option<NodeId> = None;
    loop {
        let mut dest = nodes[0];
        for &x in nodes {
            if own[x] <= own[dest] {
                dest = x;
            }
        }
        let mut from: Option<NodeId> = None;
        for x in (0..m.n).filter(|x| !nodes.contains(x)) {
            if from.is_none_or(|f| own[x] > own[f]) {
                from = Some(x);
            }
        }
        let Some(from) = from.filter(|&f| own[f] > 0 && Some(f) != prev_from) else {
            break;
        };
        actions.push(Action::MoveMemory {
            pid: p.pid,
            start_time: p.start_time,
            from,
            to: dest,
            bytes: own[from],
            reason: format!(
                "numad: migrate all {} of pid {} ({comm}) on node {from} to node {dest} after binding it to nodes {}",
                fmt_bytes(own[from]),
                p.pid,
                fmt_nodes(nodes)
            ),
        });
        own[dest] = own[dest].saturating_add(own[from]);
        own[from] = 0;
        prev_from = Some(from);
    }
    actions
}
