//! What the daemon can do with the privileges it has, said once at start. Placing another
//! user's process (`sched_setaffinity`, `move_pages`, `migrate_pages`) needs `CAP_SYS_NICE`;
//! reading another user's `numa_maps` needs ptrace-read access (`CAP_SYS_PTRACE` or root);
//! the default journal and socket live in root-owned directories.

use std::path::Path;

/// `CAP_SYS_NICE` and `CAP_SYS_PTRACE` bit numbers (linux/capability.h).
const CAP_SYS_PTRACE: u32 = 19;
const CAP_SYS_NICE: u32 = 23;

/// The effective capability mask of this process (`CapEff:` of `ROOT/proc/self/status`), or
/// `None` when it cannot be read.
pub fn effective_caps(root: &Path) -> Option<u64> {
    let text = crate::procfs::read_optional_text(&root.join("proc/self/status")).ok()??;
    let hex = text.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

/// One line saying what the daemon cannot do as `euid` with capabilities `caps`, or `None`
/// when nothing is missing (root, or the capabilities that matter).
pub fn limits_note(euid: u32, caps: Option<u64>, dry_run: bool) -> Option<String> {
    let has = |bit: u32| caps.is_some_and(|c| c & (1u64 << bit) != 0);
    let nice = euid == 0 || has(CAP_SYS_NICE);
    let ptrace = euid == 0 || has(CAP_SYS_PTRACE);
    if nice && ptrace {
        return None;
    }
    let mut cannot = Vec::new();
    if !nice {
        cannot.push(if dry_run {
            "its decisions for other users' processes could not be applied (no CAP_SYS_NICE)"
        } else {
            "it can place only processes of its own user (setting another user's affinity or moving its pages needs CAP_SYS_NICE: those attempts will fail and the process is released)"
        });
    }
    if !ptrace {
        cannot.push("other users' numa_maps are unreadable, so their memory placement is not measured (needs CAP_SYS_PTRACE)");
    }
    Some(format!(
        "running as uid {euid}, not root: it reads /proc and /sys and decides as usual, but {}; \
         the journal and socket must be in a directory this user owns (--journal, --socket)",
        cannot.join("; and ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_or_the_right_capabilities_need_no_note() {
        assert_eq!(limits_note(0, None, false), None);
        let both = (1u64 << CAP_SYS_NICE) | (1u64 << CAP_SYS_PTRACE);
        assert_eq!(limits_note(1000, Some(both), false), None);
    }

    #[test]
    fn a_plain_user_is_told_what_fails() {
        let n = limits_note(1000, Some(0), false).expect("note");
        assert!(n.starts_with("running as uid 1000, not root"), "{n}");
        assert!(
            n.contains("CAP_SYS_NICE") && n.contains("CAP_SYS_PTRACE"),
            "{n}"
        );
        assert!(!n.contains('\n'));
        let n = limits_note(1000, Some(1u64 << CAP_SYS_NICE), true).expect("note");
        assert!(
            !n.contains("CAP_SYS_NICE") && n.contains("CAP_SYS_PTRACE"),
            "{n}"
        );
    }

    #[test]
    fn caps_are_read_from_status() {
        let d = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(d.path().join("proc/self")).expect("mkdir");
        std::fs::write(
            d.path().join("proc/self/status"),
            "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t0000000000800000\n",
        )
        .expect("write");
        assert_eq!(effective_caps(d.path()), Some(1 << CAP_SYS_NICE));
        std::fs::write(d.path().join("proc/self/status"), "CapEff:\tzz\n").expect("write");
        assert_eq!(effective_caps(d.path()), None);
    }
}
