//! What a policy asks the mechanism (simulator or daemon) to do.

use std::fmt;

use serde::{Deserialize, Serialize};
use topo::{CpuSet, NodeId};

/// One request to the mechanism. Every action names the process by PID *and* start time, so
/// the mechanism never acts on a reused PID, and says why in plain words.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Give the process the home nodes `nodes` (the chosen node first, then the nearest ones)
    /// and restrict all its threads to `cpus` (the allowed CPUs of those nodes).
    SetHome {
        pid: u32,
        start_time: u64,
        nodes: Vec<NodeId>,
        cpus: CpuSet,
        reason: String,
    },
    /// Move `bytes` of the process's memory from node `from` to node `to`.
    MoveMemory {
        pid: u32,
        start_time: u64,
        from: NodeId,
        to: NodeId,
        bytes: u64,
        reason: String,
    },
    /// Forget the process's home and give back its original CPU mask.
    ClearHome {
        pid: u32,
        start_time: u64,
        reason: String,
    },
    /// Give the process's threads a scheduling slice of `slice_ns` (Linux: the fair class's
    /// custom slice, `sched_attr.sched_runtime`, 6.12 and later), or the kernel's default
    /// back when `slice_ns` is 0.
    SetSlice {
        pid: u32,
        start_time: u64,
        slice_ns: u64,
        reason: String,
    },
}

impl Action {
    pub fn pid(&self) -> u32 {
        match self {
            Action::SetHome { pid, .. }
            | Action::MoveMemory { pid, .. }
            | Action::ClearHome { pid, .. }
            | Action::SetSlice { pid, .. } => *pid,
        }
    }

    pub fn start_time(&self) -> u64 {
        match self {
            Action::SetHome { start_time, .. }
            | Action::MoveMemory { start_time, .. }
            | Action::ClearHome { start_time, .. }
            | Action::SetSlice { start_time, .. } => *start_time,
        }
    }

    /// The bytes a `MoveMemory` asks to move (0 for the other actions).
    pub fn bytes(&self) -> u64 {
        match self {
            Action::MoveMemory { bytes, .. } => *bytes,
            _ => 0,
        }
    }

    pub fn reason(&self) -> &str {
        match self {
            Action::SetHome { reason, .. }
            | Action::MoveMemory { reason, .. }
            | Action::ClearHome { reason, .. }
            | Action::SetSlice { reason, .. } => reason,
        }
    }

    /// `set_home`, `move_memory`, `clear_home` or `set_slice` (as in the serialised form).
    pub fn kind(&self) -> &'static str {
        match self {
            Action::SetHome { .. } => "set_home",
            Action::MoveMemory { .. } => "move_memory",
            Action::ClearHome { .. } => "clear_home",
            Action::SetSlice { .. } => "set_slice",
        }
    }
}

/// One log line: `pid 123: set home 1 (CPUs 4-7): <reason>`.
impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::SetHome {
                pid,
                nodes,
                cpus,
                reason,
                ..
            } => {
                let nodes: Vec<String> = nodes.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "pid {pid}: set home {} (CPUs {cpus}): {reason}",
                    nodes.join(",")
                )
            }
            Action::MoveMemory {
                pid,
                from,
                to,
                bytes,
                reason,
                ..
            } => write!(
                f,
                "pid {pid}: move {} from node {from} to node {to}: {reason}",
                crate::common::fmt_bytes(*bytes)
            ),
            Action::ClearHome { pid, reason, .. } => write!(f, "pid {pid}: clear home: {reason}"),
            Action::SetSlice {
                pid: p,
                slice_ns: 0,
                reason,
                ..
            } => write!(f, "pid {p}: restore the kernel's slice: {reason}"),
            Action::SetSlice {
                pid,
                slice_ns,
                reason,
                ..
            } => write!(
                f,
                "pid {pid}: set slice {} ms: {reason}",
                *slice_ns as f64 / 1e6
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accessors_and_display() {
        let a = Action::SetHome {
            pid: 3,
            start_time: 9,
            nodes: vec![1, 0],
            cpus: CpuSet::parse_list("4-7,0-3").expect("cpus"),
            reason: "why".into(),
        };
        assert_eq!(
            (a.pid(), a.start_time(), a.reason(), a.kind()),
            (3, 9, "why", "set_home")
        );
        assert_eq!(a.to_string(), "pid 3: set home 1,0 (CPUs 0-7): why");
        let m = Action::MoveMemory {
            pid: 3,
            start_time: 9,
            from: 0,
            to: 1,
            bytes: 32 << 20,
            reason: "home".into(),
        };
        assert_eq!(
            m.to_string(),
            "pid 3: move 32.0 MiB from node 0 to node 1: home"
        );
        let c = Action::ClearHome {
            pid: 3,
            start_time: 9,
            reason: "idle".into(),
        };
        assert_eq!(
            (c.kind(), c.to_string().as_str()),
            ("clear_home", "pid 3: clear home: idle")
        );
        let s = Action::SetSlice {
            pid: 3,
            start_time: 9,
            slice_ns: 100_000_000,
            reason: "batch".into(),
        };
        assert_eq!(
            (s.kind(), s.to_string().as_str()),
            ("set_slice", "pid 3: set slice 100 ms: batch")
        );
        let back = Action::SetSlice {
            pid: 3,
            start_time: 9,
            slice_ns: 0,
            reason: "no home".into(),
        };
        assert_eq!(
            back.to_string(),
            "pid 3: restore the kernel's slice: no home"
        );
    }

    #[test]
    fn serialises_with_a_tag() {
        let a = Action::MoveMemory {
            pid: 3,
            start_time: 9,
            from: 0,
            to: 1,
            bytes: 4096,
            reason: "home".into(),
        };
        let j = serde_json::to_string(&a).expect("json");
        assert_eq!(
            j,
            r#"{"action":"move_memory","pid":3,"start_time":9,"from":0,"to":1,"bytes":4096,"reason":"home"}"#
        );
        assert_eq!(serde_json::from_str::<Action>(&j).expect("back"), a);
    }
}
