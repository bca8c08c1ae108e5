//! Memory moves: a batch of a process's own pages moved with `move_pages`, at most the
//! interval's budget, and the outcome counted per page.

use super::*;

impl Actuator {
    /// Moves up to `bytes` of process `key`'s memory from topology node `from` to `to`.
    pub fn move_memory(
        &mut self,
        host: &Host,
        key: ProcessKey,
        from: NodeId,
        to: NodeId,
        bytes: u64,
    ) -> (Outcome, Moved) {
        // Before the dry run's outcome: a dry run under fake NUMA says what the daemon would
        // do, and it would skip this move.
        if host.fake {
            return (
                Outcome::Skipped(
                    "fake NUMA: the pseudo-nodes share one real node, no memory to move".into(),
                ),
                Moved::default(),
            );
        }
        if self.dry_run {
            return (Outcome::DryRun, Moved::default());
        }
        let (Some(kfrom), Some(kto)) = (host.kernel_node(from), host.kernel_node(to)) else {
            return (
                Outcome::Failed(format!("node {from} or {to} is not a host node")),
                Moved::default(),
            );
        };
        if self.searched_out.contains(&(key, kfrom)) {
            return (
                Outcome::Skipped(format!(
                    "a search of all of its pages in this decision found no more on node {from}"
                )),
                Moved::default(),
            );
        }
        match self.try_move(key, kfrom, kto, bytes) {
            Ok(Some(m)) if m.pages_found == 0 => (
                Outcome::Skipped(format!(
                    "no page of its own memory was found on node {from} (moved since the figures were read)"
                )),
                m,
            ),
            Ok(Some(m)) => (
                Outcome::Done(format!(
                    "{} moved, {} failed",
                    topo::count(m.pages_moved, "page"),
                    m.pages_failed
                )),
                m,
            ),
            Ok(None) => (
                Outcome::Skipped("the process exited".into()),
                Moved::default(),
            ),
            Err(e) => (Outcome::Failed(e.to_string()), Moved::default()),
        }
    }

    fn try_move(
        &mut self,
        key: ProcessKey,
        kfrom: usize,
        kto: usize,
        bytes: u64,
    ) -> Result<Option<Moved>, Error> {
        let page = page_size();
        let want = (bytes / page).max(1) as usize;
        let Live::Alive(stat) = crate::procfs::stat::read(&self.root, key.pid)? else {
            return Ok(None);
        };
        if stat.starttime != key.starttime {
            return Ok(None);
        }
        let Live::Alive(mappings) = maps::read(&self.root, key.pid)? else {
            return Ok(None);
        };
        let addrs: Vec<usize> = mappings
            .iter()
            .filter(|m| m.is_private() && is_own_memory(&m.path))
            .flat_map(|m| m.page_addresses(page))
            .collect();
        if addrs.is_empty() {
            self.searched_out.insert((key, kfrom));
            return Ok(Some(Moved::default()));
        }
        let cursor = self.cursors.get(&key).copied().unwrap_or(0);
        let start = addrs.partition_point(|&a| a < cursor) % addrs.len();
        let batch = self.memory.batch_pages;
        let mut found = Vec::with_capacity(want.min(1 << 16));
        let mut queried = 0usize;
        let mut last = cursor;
        let order = addrs[start..].iter().chain(addrs[..start].iter());
        let mut chunk = Vec::with_capacity(batch);
        for &a in order {
            chunk.push(a);
            if chunk.len() == batch {
                queried += chunk.len();
                if !query(key.pid, &chunk, kfrom, batch, &mut found)? {
                    return Ok(None);
                }
                last = a.saturating_add(1);
                chunk.clear();
                if found.len() >= want || queried >= self.memory.max_query_pages {
                    break;
                }
            }
        }
        if !chunk.is_empty() && found.len() < want && queried < self.memory.max_query_pages {
            if !query(key.pid, &chunk, kfrom, batch, &mut found)? {
                return Ok(None);
            }
            queried += chunk.len();
            last = chunk.last().map_or(last, |a| a.saturating_add(1));
        }
        self.cursors.insert(key, last);
        if queried >= addrs.len() && found.len() < want {
            // Every page was looked at: the next batches of this decision would find no more.
            self.searched_out.insert((key, kfrom));
        }
        found.truncate(want);
        if found.is_empty() {
            return Ok(Some(Moved::default()));
        }
        let opts = MoveOptions {
            batch,
            move_all: false,
        };
        let Live::Alive(report) = migrate::move_pages(key.pid, &found, kto, opts)? else {
            return Ok(None);
        };
        let moved = report.on_node(kto) as u64;
        Ok(Some(Moved {
            pages_found: found.len() as u64,
            pages_moved: moved,
            pages_failed: report.failed() as u64,
            bytes_moved: moved * page,
        }))
    }
}

/// Queries the node of each page of `chunk`, appending those on `node` to `found`. False when
/// the process exited.
fn query(
    pid: u32,
    chunk: &[usize],
    node: usize,
    batch: usize,
    found: &mut Vec<usize>,
) -> Result<bool, Error> {
    let Live::Alive(r) = migrate::page_nodes(pid, chunk, batch)? else {
        return Ok(false);
    };
    found.extend(
        chunk
            .iter()
            .zip(&r.status)
            .filter(|(_, s)| s.node() == Some(node))
            .map(|(a, _)| *a),
    );
    Ok(true)
}

/// The process's own memory: anonymous mappings, heap, stack (not files, not the vDSO).
fn is_own_memory(path: &str) -> bool {
    path.is_empty() || path == "[heap]" || path == "[stack]" || path.starts_with("[anon:")
}

fn page_size() -> u64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE) {
        Ok(Some(p)) if p > 0 => p as u64,
        _ => 4096,
    }
}
