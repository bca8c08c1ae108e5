//! Memory model: each process's regions are made of page groups (2 MiB by default), each
//! placed on one node when first touched, following the region's memory policy. Nodes have a
//! capacity; an allocation that finds its node full falls back to the nearest node with room,
//! as the kernel's zone lists do.

use serde::{Deserialize, Serialize};
use topo::{NodeId, Topology};

/// Where a region's pages go when first touched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum MemPolicy {
    /// The node of the CPU that touches the page (Linux default).
    #[default]
    FirstTouch,
    /// Only these nodes (first in the list with room, like MPOL_BIND).
    Bind(Vec<NodeId>),
    /// This node if it has room, else fall back (MPOL_PREFERRED).
    Preferred(NodeId),
    /// Round robin over these nodes by page group (MPOL_INTERLEAVE); empty means all nodes.
    Interleave(Vec<NodeId>),
}

/// A memory policy that does not parse; each variant names what was given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MemPolicyError {
    #[error("bad node number `{node}`")]
    BadNode { node: String },
    #[error("bind needs nodes, e.g. bind:0,1")]
    BindWithoutNodes,
    #[error("preferred needs exactly one node, e.g. preferred:1")]
    PreferredNotOneNode,
    #[error(
        "unknown memory policy `{policy}` (valid: first-touch, bind:N[,N..], preferred:N, interleave[:N,..])"
    )]
    Unknown { policy: String },
}

impl MemPolicy {
    /// Parse `first-touch`, `bind:0,1`, `preferred:2`, `interleave` or `interleave:0,1`.
    pub fn parse(s: &str) -> Result<MemPolicy, MemPolicyError> {
        let (kind, arg) = match s.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (s, None),
        };
        let nodes = |a: Option<&str>| -> Result<Vec<NodeId>, MemPolicyError> {
            a.unwrap_or("")
                .split(',')
                .filter(|x| !x.is_empty())
                .map(|x| {
                    x.trim()
                        .parse::<NodeId>()
                        .map_err(|_| MemPolicyError::BadNode { node: x.into() })
                })
                .collect()
        };
        match kind {
            "first-touch" | "default" if arg.is_none() => Ok(MemPolicy::FirstTouch),
            "bind" => {
                let n = nodes(arg)?;
                if n.is_empty() {
                    return Err(MemPolicyError::BindWithoutNodes);
                }
                Ok(MemPolicy::Bind(n))
            }
            "preferred" => match nodes(arg)?.as_slice() {
                [n] => Ok(MemPolicy::Preferred(*n)),
                _ => Err(MemPolicyError::PreferredNotOneNode),
            },
            "interleave" => Ok(MemPolicy::Interleave(nodes(arg)?)),
            _ => Err(MemPolicyError::Unknown { policy: s.into() }),
        }
    }

    /// Node ids the policy names, to check against the machine.
    pub fn nodes(&self) -> &[NodeId] {
        match self {
            MemPolicy::FirstTouch => &[],
            MemPolicy::Bind(n) | MemPolicy::Interleave(n) => n,
            MemPolicy::Preferred(n) => std::slice::from_ref(n),
        }
    }
}

/// One region of a process's address space (an array, a heap, a shared buffer).
#[derive(Clone, Debug)]
pub struct Region {
    pub name: String,
    pub bytes: u64,
    pub policy: MemPolicy,
    /// Node of each page group; `None` until first touched.
    pub groups: Vec<Option<NodeId>>,
    /// Bytes of this region on each node.
    pub node_bytes: Vec<u64>,
    group_bytes: u64,
    /// Unplaced page groups already reported as allocation failures.
    reported_failures: u64,
    /// Bytes a program has initialised so far, from the start (`TouchPart` goes on from here).
    pub cursor: u64,
}

impl Region {
    pub fn new(
        name: &str,
        bytes: u64,
        policy: MemPolicy,
        group_bytes: u64,
        nr_nodes: usize,
    ) -> Self {
        let n = bytes.div_ceil(group_bytes).max(1) as usize;
        Region {
            name: name.to_string(),
            bytes,
            policy,
            groups: vec![None; n],
            node_bytes: vec![0; nr_nodes],
            group_bytes,
            reported_failures: 0,
            cursor: 0,
        }
    }

    /// Size of page group `g` (the last one may be partial).
    pub fn group_size(&self, g: usize) -> u64 {
        let start = g as u64 * self.group_bytes;
        self.group_bytes
            .min(self.bytes.saturating_sub(start))
            .max(1)
    }

    /// Page groups still unplaced that were not reported before (each failure counts once).
    pub fn new_failures(&mut self) -> u64 {
        let unplaced = self.groups.iter().filter(|g| g.is_none()).count() as u64;
        let new = unplaced.saturating_sub(self.reported_failures);
        self.reported_failures = self.reported_failures.max(unplaced);
        new
    }

    pub fn allocated_bytes(&self) -> u64 {
        self.node_bytes.iter().sum()
    }

    /// Number of page groups already placed.
    pub fn touched_groups(&self) -> usize {
        self.groups.iter().filter(|g| g.is_some()).count()
    }

    /// Fraction of this region's allocated memory on each node (first-touch target node if
    /// nothing is allocated yet).
    pub fn node_fractions(&self, toucher: NodeId, out: &mut [f64]) {
        let total = self.allocated_bytes();
        if total == 0 {
            out.fill(0.0);
            out[toucher] = 1.0;
            return;
        }
        for (o, &b) in out.iter_mut().zip(&self.node_bytes) {
            *o = b as f64 / total as f64;
        }
    }
}

/// Per-node memory use of the whole machine.
#[derive(Clone, Debug)]
pub struct NodeMemory {
    pub capacity: Vec<u64>,
    pub used: Vec<u64>,
    /// Bumped whenever a page group is placed, moved or freed anywhere.
    version: u64,
}

impl NodeMemory {
    pub fn new(topo: &Topology) -> Self {
        NodeMemory {
            capacity: topo.nodes.iter().map(|n| n.mem_bytes).collect(),
            used: vec![0; topo.nr_nodes()],
            version: 0,
        }
    }

    /// Changes with every placement, move or release of memory (what any process holds on
    /// any node can only have changed when this has).
    pub fn version(&self) -> u64 {
        self.version
    }

    fn has_room(&self, node: NodeId, bytes: u64) -> bool {
        self.used[node] + bytes <= self.capacity[node]
    }

    /// The node a page group of `region` touched from `toucher` lands on, or `None` when the
    /// machine (or the bind set) is full.
    pub fn place(
        &self,
        topo: &Topology,
        region: &Region,
        group: usize,
        toucher: NodeId,
    ) -> Option<NodeId> {
        let bytes = region.group_size(group);
        // The first node with room in `nodes_by_distance(start)` order: the nearest with
        // room, lowest id on ties. Found without sorting: this runs whenever a first touch is
        // rated, for every page group it places.
        let nearest = |start: NodeId, allowed: &dyn Fn(NodeId) -> bool| {
            let row = &topo.distance[start];
            let fits = |n: NodeId| allowed(n) && self.has_room(n, bytes);
            // Mostly the start node itself, which is nearest to itself (SLIT 10).
            let start_first = row
                .iter()
                .enumerate()
                .all(|(n, &d)| (d, n) >= (row[start], start));
            if start_first && fits(start) {
                return Some(start);
            }
            (0..row.len())
                .filter(|&n| fits(n))
                .min_by_key(|&n| (row[n], n))
        };
        let fallback = |start: NodeId| nearest(start, &|_| true);
        match &region.policy {
            MemPolicy::FirstTouch => fallback(toucher),
            MemPolicy::Preferred(n) => fallback(*n),
            MemPolicy::Bind(nodes) => nearest(toucher, &|n| nodes.contains(&n)),
            MemPolicy::Interleave(nodes) => {
                let all: Vec<NodeId> = if nodes.is_empty() {
                    (0..topo.nr_nodes()).collect()
                } else {
                    nodes.clone()
                };
                let want = all[group % all.len()];
                if self.has_room(want, bytes) {
                    Some(want)
                } else {
                    fallback(want)
                }
            }
        }
    }

    /// Place page group `group` of `region` (first touch from `toucher`). Returns the node,
    /// or `None` if out of memory.
    pub fn touch(
        &mut self,
        topo: &Topology,
        region: &mut Region,
        group: usize,
        toucher: NodeId,
    ) -> Option<NodeId> {
        if let Some(n) = region.groups[group] {
            return Some(n);
        }
        let node = self.place(topo, region, group, toucher)?;
        let bytes = region.group_size(group);
        self.used[node] += bytes;
        region.node_bytes[node] += bytes;
        region.groups[group] = Some(node);
        self.version += 1;
        Some(node)
    }

    /// Move page group `group` of `region` to `to`. Returns the bytes moved (0 if it was
    /// already there, untouched, or `to` is full).
    pub fn migrate(&mut self, region: &mut Region, group: usize, to: NodeId) -> u64 {
        let Some(from) = region.groups[group] else {
            return 0;
        };
        let bytes = region.group_size(group);
        if from == to || !self.has_room(to, bytes) {
            return 0;
        }
        self.used[from] -= bytes;
        self.used[to] += bytes;
        region.node_bytes[from] -= bytes;
        region.node_bytes[to] += bytes;
        region.groups[group] = Some(to);
        self.version += 1;
        bytes
    }

    /// Give back every page group of `region`.
    pub fn free(&mut self, region: &mut Region) {
        for (node, b) in region.node_bytes.iter_mut().enumerate() {
            self.used[node] -= *b;
            *b = 0;
        }
        region.groups.fill(None);
        self.version += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Topology {
        topo::parse_synthetic("nodes=2,cpus-per-node=2,mem-gib=1").expect("synthetic")
    }

    #[test]
    fn first_touch_and_fallback() {
        let t = machine();
        let mut m = NodeMemory::new(&t);
        let gb = 1u64 << 30;
        let mut r = Region::new("a", gb + (8 << 20), MemPolicy::FirstTouch, 2 << 20, 2);
        for g in 0..r.groups.len() {
            assert!(m.touch(&t, &mut r, g, 1).is_some());
        }
        // Node 1 fills up (1 GiB), the rest falls back to node 0.
        assert_eq!(r.node_bytes[1], gb);
        assert_eq!(r.node_bytes[0], 8 << 20);
        assert_eq!(m.used, vec![8 << 20, gb]);
        m.free(&mut r);
        assert_eq!(m.used, vec![0, 0]);
    }

    #[test]
    fn policies() {
        let t = machine();
        let mut m = NodeMemory::new(&t);
        let mut r = Region::new("a", 8 << 20, MemPolicy::Interleave(vec![]), 2 << 20, 2);
        for g in 0..4 {
            m.touch(&t, &mut r, g, 0);
        }
        assert_eq!(r.node_bytes, vec![4 << 20, 4 << 20]);
        let mut p = Region::new("p", 4 << 20, MemPolicy::Preferred(1), 2 << 20, 2);
        m.touch(&t, &mut p, 0, 0);
        assert_eq!(p.groups[0], Some(1));
        let moved = m.migrate(&mut p, 0, 0);
        assert_eq!(moved, 2 << 20);
        assert_eq!(p.node_bytes, vec![2 << 20, 0]);
        assert_eq!(
            MemPolicy::parse("bind:0,1"),
            Ok(MemPolicy::Bind(vec![0, 1]))
        );
        assert!(MemPolicy::parse("preferred:").is_err());
        assert!(
            MemPolicy::parse("sticky")
                .unwrap_err()
                .to_string()
                .contains("valid:")
        );
    }

    /// `place` as it was written first: the first node with room in
    /// `nodes_by_distance` order (among the bind set for `Bind`).
    fn place_by_sorting(
        m: &NodeMemory,
        t: &Topology,
        r: &Region,
        toucher: NodeId,
    ) -> Option<NodeId> {
        let bytes = r.group_size(0);
        let (start, set) = match &r.policy {
            MemPolicy::FirstTouch => (toucher, None),
            MemPolicy::Preferred(n) => (*n, None),
            MemPolicy::Bind(nodes) => (toucher, Some(nodes)),
            MemPolicy::Interleave(_) => unreachable!("not generated"),
        };
        t.nodes_by_distance(start)
            .into_iter()
            .filter(|n| set.is_none_or(|s| s.contains(n)))
            .find(|&n| m.has_room(n, bytes))
    }

    proptest::proptest! {
        /// The scan for the nearest node with room gives what sorting the nodes by distance
        /// gave, ties (also with the node's own distance) and full nodes included.
        #[test]
        fn nearest_node_with_room_matches_the_sorted_order(
            dist in proptest::collection::vec(10u32..14, 16),
            full in proptest::collection::vec(proptest::bool::ANY, 4),
            toucher in 0usize..4,
            policy in 0usize..3,
            pref in 0usize..4,
            bind in proptest::collection::vec(0usize..4, 1..4),
        ) {
            let mut t = topo::parse_synthetic("nodes=4,cpus-per-node=1,mem-gib=1").expect("synthetic");
            for a in 0..4 {
                for b in 0..4 {
                    t.distance[a][b] = if a == b { 10 } else { dist[a * 4 + b] };
                }
            }
            let mut m = NodeMemory::new(&t);
            for (n, &f) in full.iter().enumerate() {
                if f {
                    m.used[n] = m.capacity[n];
                }
            }
            let policy = match policy {
                0 => MemPolicy::FirstTouch,
                1 => MemPolicy::Preferred(pref),
                _ => MemPolicy::Bind(bind),
            };
            let r = Region::new("r", 2 << 20, policy, 2 << 20, 2);
            proptest::prop_assert_eq!(m.place(&t, &r, 0, toucher), place_by_sorting(&m, &t, &r, toucher));
        }
    }
}
