//! `/proc/PID/cgroup` (the process's cgroups), `/proc/self/mountinfo` (where the cgroup
//! hierarchies are mounted) and the cpuset files of a cgroup under `/sys/fs/cgroup`.
//!
//! `cgroup` has one line per hierarchy, `ID:CONTROLLERS:PATH`: `0::/system.slice/x.service` for
//! the unified (v2) hierarchy, `4:cpuset:/docker/abc` for a v1 hierarchy. The cpuset
//! controller belongs to exactly one hierarchy: v1 when a v1 line lists `cpuset`, else v2.
//!
//! The effective cpuset, the CPUs and memory nodes the cgroup really allows, is read from
//!
//! | hierarchy | files | when the cgroup lacks them |
//! | --- | --- | --- |
//! | v2 | `MOUNT/PATH/cpuset.cpus.effective`, `cpuset.mems.effective` | the controller is not enabled there: the nearest ancestor's apply |
//! | v1 | `MOUNT/PATH/cpuset.effective_cpus`, `cpuset.effective_mems` (Linux 3.16+), else `cpuset.cpus`, `cpuset.mems` | none: every v1 cpuset cgroup has them |
//!
//! MOUNT comes from `ROOT/proc/self/mountinfo` (`cgroup2` mounts, and `cgroup` mounts whose
//! options list `cpuset`), else the conventional `/sys/fs/cgroup` (v2) and
//! `/sys/fs/cgroup/cpuset` (v1). Paths are taken as seen from the reading process's cgroup
//! namespace; a daemon in a container sees only its own subtree.
//!
//! These files are optional: no cpuset controller mounted, or a cgroup removed since `cgroup`
//! was read, gives `None`, and callers fall back to the online CPUs.

use std::path::{Path, PathBuf};

use topo::CpuSet;

use super::read_optional_text;
use crate::error::ProcError;
use crate::{Live, Pid};

/// One v1 line of `cgroup`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct V1Cgroup {
    pub hierarchy: u32,
    /// Controllers of the hierarchy (`cpu`, `cpuacct`, `name=systemd`, ...).
    pub controllers: Vec<String>,
    pub path: String,
}

/// A parsed `/proc/PID/cgroup`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcCgroup {
    /// The unified (v2) hierarchy's path (`0::PATH`), if the line is there.
    pub v2: Option<String>,
    /// The v1 hierarchies' lines.
    pub v1: Vec<V1Cgroup>,
}

/// Which hierarchy a cpuset path belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hierarchy {
    V1,
    V2,
}

impl ProcCgroup {
    /// The cgroup path that names the process's service or container: the unified path when
    /// there is one, else the `name=systemd` path, else the cpuset path, else the first line's.
    pub fn path(&self) -> Option<&str> {
        self.v2
            .as_deref()
            .or_else(|| self.v1_path("name=systemd"))
            .or_else(|| self.v1_path("cpuset"))
            .or_else(|| self.v1.first().map(|l| l.path.as_str()))
    }

    /// The path of the v1 hierarchy that has `controller`.
    pub fn v1_path(&self, controller: &str) -> Option<&str> {
        self.v1
            .iter()
            .find(|l| l.controllers.iter().any(|c| c == controller))
            .map(|l| l.path.as_str())
    }

    /// Where the process's cpuset is: the v1 cpuset hierarchy if one is listed, else v2.
    pub fn cpuset_path(&self) -> Option<(Hierarchy, &str)> {
        self.v1_path("cpuset")
            .map(|p| (Hierarchy::V1, p))
            .or_else(|| self.v2.as_deref().map(|p| (Hierarchy::V2, p)))
    }
}

/// Parses the text of `/proc/PID/cgroup`.
pub fn parse(text: &str) -> Result<ProcCgroup, crate::error::ParseError> {
    let mut cg = ProcCgroup::default();
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        if line.is_empty() {
            continue;
        }
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(ctrl), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(crate::error::ParseError::from(format!(
                "line {ln}: `{line}` is not ID:CONTROLLERS:PATH (truncated?)"
            )));
        };
        let hierarchy: u32 = id.parse().map_err(|_| {
            crate::error::ParseError::from(format!(
                "line {ln}: hierarchy ID `{id}` is not a number"
            ))
        })?;
        if !path.starts_with('/') {
            return Err(crate::error::ParseError::from(format!(
                "line {ln}: cgroup path `{path}` is not absolute"
            )));
        }
        if hierarchy == 0 && ctrl.is_empty() {
            cg.v2 = Some(path.to_string());
        } else {
            cg.v1.push(V1Cgroup {
                hierarchy,
                controllers: ctrl.split(',').map(str::to_string).collect(),
                path: path.to_string(),
            });
        }
    }
    Ok(cg)
}

/// Reads `ROOT/proc/PID/cgroup`. `Alive(None)` on a kernel without cgroups.
pub fn read(root: &Path, pid: Pid) -> Result<Live<Option<ProcCgroup>>, ProcError> {
    super::with_dir(root, pid, |d| d.cgroup())
}

/// Where the cgroup hierarchies that hold cpusets are mounted (absolute paths on the host,
/// to be joined under the root).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CgroupMounts {
    /// The `cgroup2` mount point.
    pub v2: Option<PathBuf>,
    /// The mount point of the v1 hierarchy with the `cpuset` controller.
    pub v1_cpuset: Option<PathBuf>,
}

impl CgroupMounts {
    /// From `ROOT/proc/self/mountinfo`; without it, the conventional places if they exist
    /// under the root.
    pub fn read(root: &Path) -> Result<CgroupMounts, ProcError> {
        let path = root.join("proc/self/mountinfo");
        match read_optional_text(&path)? {
            Some(text) => parse_mountinfo(&text).map_err(|r| ProcError::parse(&path, r)),
            None => {
                let mut m = CgroupMounts::default();
                if root.join("sys/fs/cgroup/cgroup.controllers").exists() {
                    m.v2 = Some(PathBuf::from("/sys/fs/cgroup"));
                }
                if root.join("sys/fs/cgroup/cpuset").is_dir() {
                    m.v1_cpuset = Some(PathBuf::from("/sys/fs/cgroup/cpuset"));
                }
                Ok(m)
            }
        }
    }
}

/// Parses `mountinfo` (`man 5 proc_pid_mountinfo`) for the cgroup mounts:
/// `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS`.
pub fn parse_mountinfo(text: &str) -> Result<CgroupMounts, crate::error::ParseError> {
    let mut m = CgroupMounts::default();
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let (left, right) = line.split_once(" - ").ok_or_else(|| {
            crate::error::ParseError::from(format!("line {ln}: no ` - ` separator (truncated?)"))
        })?;
        let mount_point = left
            .split_ascii_whitespace()
            .nth(4)
            .ok_or_else(|| crate::error::ParseError::from(format!("line {ln}: no mount point")))?;
        let mut r = right.split_ascii_whitespace();
        let fstype = r.next().ok_or_else(|| {
            crate::error::ParseError::from(format!("line {ln}: no filesystem type"))
        })?;
        let _source = r.next();
        let superopts = r.next().unwrap_or("");
        match fstype {
            "cgroup2" if m.v2.is_none() => m.v2 = Some(PathBuf::from(unescape(mount_point))),
            "cgroup" if m.v1_cpuset.is_none() && superopts.split(',').any(|o| o == "cpuset") => {
                m.v1_cpuset = Some(PathBuf::from(unescape(mount_point)))
            }
            _ => {}
        }
    }
    Ok(m)
}

/// Undoes the octal escapes of `mountinfo` (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The effective cpuset of a cgroup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cpuset {
    /// CPUs the cgroup's tasks may run on.
    pub cpus: CpuSet,
    /// Memory nodes they may allocate from.
    pub mems: CpuSet,
    /// The cgroup directory the files were read from (an ancestor for v2 when the
    /// controller is not enabled further down).
    pub dir: PathBuf,
}

/// Reads the effective cpuset of the process's cgroup; `None` when no cpuset controller is
/// mounted or the cgroup is gone. See the module documentation for the files.
pub fn read_cpuset(
    root: &Path,
    mounts: &CgroupMounts,
    cg: &ProcCgroup,
) -> Result<Option<Cpuset>, ProcError> {
    let Some((hier, path)) = cg.cpuset_path() else {
        return Ok(None);
    };
    let mount = match hier {
        Hierarchy::V1 => &mounts.v1_cpuset,
        Hierarchy::V2 => &mounts.v2,
    };
    let Some(mount) = mount else { return Ok(None) };
    let base = root.join(mount.strip_prefix("/").unwrap_or(mount));
    let rel = path.trim_start_matches('/');
    if rel.split('/').any(|c| c == "..") {
        // A path outside our cgroup namespace: not reachable from here.
        return Ok(None);
    }
    let mut dir = if rel.is_empty() {
        base.clone()
    } else {
        base.join(rel)
    };
    let names: &[(&str, &str)] = match hier {
        Hierarchy::V1 => &[
            ("cpuset.effective_cpus", "cpuset.effective_mems"),
            ("cpuset.cpus", "cpuset.mems"),
        ],
        Hierarchy::V2 => &[("cpuset.cpus.effective", "cpuset.mems.effective")],
    };
    loop {
        for (cpus_name, mems_name) in names {
            let cpus_path = dir.join(cpus_name);
            if let Some(cpus) = read_optional_text(&cpus_path)? {
                let mems_path = dir.join(mems_name);
                let mems = read_optional_text(&mems_path)?.unwrap_or_default();
                let cpus =
                    CpuSet::parse_list(&cpus).map_err(|e| ProcError::parse(&cpus_path, e))?;
                let mems =
                    CpuSet::parse_list(&mems).map_err(|e| ProcError::parse(&mems_path, e))?;
                if cpus.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(Cpuset { cpus, mems, dir }));
            }
        }
        if hier == Hierarchy::V1 || dir == base || !dir.pop() || !dir.starts_with(&base) {
            return Ok(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_and_v2_lines() {
        let text = "12:cpuset:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/system.slice/docker.service\n0::/system.slice/docker.service\n";
        let cg = parse(text).expect("parses");
        assert_eq!(cg.v2.as_deref(), Some("/system.slice/docker.service"));
        assert_eq!(cg.v1.len(), 3);
        assert_eq!(cg.v1[1].controllers, vec!["cpu", "cpuacct"]);
        assert_eq!(cg.path(), Some("/system.slice/docker.service"));
        assert_eq!(cg.cpuset_path(), Some((Hierarchy::V1, "/docker/abc")));
        let v2 = parse("0::/user.slice/a:b.scope\n").expect("v2 only");
        assert_eq!(v2.path(), Some("/user.slice/a:b.scope"));
        assert_eq!(
            v2.cpuset_path(),
            Some((Hierarchy::V2, "/user.slice/a:b.scope"))
        );
        let v1 = parse("3:cpuset:/\n2:name=systemd:/init.scope\n").expect("v1 only");
        assert_eq!(v1.path(), Some("/init.scope"));
        assert_eq!(parse("").expect("empty").path(), None);
    }

    #[test]
    fn malformed() {
        assert!(
            parse("0:/x\n")
                .unwrap_err()
                .contains("not ID:CONTROLLERS:PATH")
        );
        assert!(parse("x::/\n").unwrap_err().contains("hierarchy ID `x`"));
        assert!(parse("0::relative\n").unwrap_err().contains("not absolute"));
    }

    #[test]
    fn mountinfo() {
        let text = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
34 31 0:31 / /sys/fs/cgroup/cpu\\040set rw,relatime shared:9 - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
        let m = parse_mountinfo(text).expect("parses");
        assert_eq!(m.v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
        assert_eq!(m.v1_cpuset, Some(PathBuf::from("/sys/fs/cgroup/cpu set")));
        assert!(
            parse_mountinfo("31 23 0:28 / /x rw\n")
                .unwrap_err()
                .contains("line 1")
        );
        assert_eq!(unescape("a\\134b\\04"), "a\\b\\04");
    }
}
