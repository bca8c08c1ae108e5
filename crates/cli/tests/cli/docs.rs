//! The repository's own documentation holds together: no file refers to a design document
//! outside the repository, every relative link between the docs pages resolves, and every
//! machine key and scheduler option is documented.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "target" || name.starts_with('.') || name == "results" {
            continue;
        }
        if p.is_dir() {
            walk(&p, out);
        } else if ["rs", "md", "toml", "sh", "py", "service"]
            .iter()
            .any(|x| p.extension().is_some_and(|e| e == *x))
        {
            out.push(p);
        }
    }
}

#[test]
fn no_reference_leaves_the_repository() {
    // Spelled in two pieces so that this file does not match itself.
    let outside = format!("{}{}", "DESIGN", ".md");
    let mut files = Vec::new();
    walk(&repo(), &mut files);
    assert!(files.len() > 100, "walked only {} files", files.len());
    let bad: Vec<String> = files
        .iter()
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(&outside)))
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        bad.is_empty(),
        "{outside} is not in the repository; cite docs/ARCHITECTURE.md: {bad:?}"
    );
}

/// The Markdown pages under `dir`, at any depth.
fn pages_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("docs").flatten() {
        let p = e.path();
        if p.is_dir() {
            pages_under(&p, out);
        } else if p.extension().is_some_and(|e| e == "md") {
            out.push(p);
        }
    }
}

#[test]
fn links_between_docs_resolve() {
    let mut pages = Vec::new();
    pages_under(&repo().join("docs"), &mut pages);
    assert!(pages.len() > 10, "found only {} pages", pages.len());
    pages.push(repo().join("README.md"));
    pages.push(repo().join("CHANGELOG.md"));
    for page in pages {
        let text = std::fs::read_to_string(&page).expect("page");
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap_or("");
            if target.is_empty()
                || target.contains("://")
                || ![".md", ".svg"].iter().any(|x| target.ends_with(x))
            {
                continue;
            }
            let dir = page.parent().expect("dir");
            assert!(
                dir.join(target).exists(),
                "{}: link to {target} does not resolve",
                page.display()
            );
        }
    }
}

/// Every key of a machine file's `[cpu]` and `[memory]` tables and every `--machine-set`
/// parameter is described in docs/MACHINES.md.
#[test]
fn machine_keys_are_documented() {
    let doc = std::fs::read_to_string(repo().join("docs/MACHINES.md")).expect("MACHINES.md");
    let mut spec = topo::presets::preset_spec("xeon2s").expect("preset");
    // Optional keys are left out of the TOML when absent: give them a value.
    spec.cpu.stream_mlp = Some(2.0);
    spec.cpu.llc_latency_ns = Some(1.0);
    spec.cpu.refill_ns = Some(1.0);
    spec.cpu.llc_stream_share = 1.0;
    spec.cpu.llc_ways = Some(16);
    spec.cpu.llc_private = true;
    spec.cpu.tlb_entries = Some(96);
    spec.cpu.tlb_walk_cycles = Some(15.0);
    spec.memory.latency_ns = Some(vec![vec![1.0]]);
    let text = spec.to_toml_string();
    let table: toml::Table = text.parse().expect("spec TOML");
    let mut missing = Vec::new();
    for section in ["cpu", "memory"] {
        for key in table[section].as_table().expect("table").keys() {
            if !doc.contains(&format!("\n{key} = ")) {
                missing.push(format!("{section}.{key}"));
            }
        }
    }
    for p in sim::experiments::sweep::MACHINE_PARAMS {
        if !doc.contains(&format!("`{p}`")) {
            missing.push(format!("--machine-set {p}"));
        }
    }
    assert!(missing.is_empty(), "not in docs/MACHINES.md: {missing:?}");
}

/// Every option of every CPU scheduler is named in docs/POLICIES.md.
#[test]
fn scheduler_options_are_documented() {
    let doc = std::fs::read_to_string(repo().join("docs/POLICIES.md")).expect("POLICIES.md");
    let topo = topo::presets::preset("azusa16").expect("preset");
    let mut missing = Vec::new();
    for name in sim::sched::registry::names() {
        let entry = sim::sched::registry::find(name).expect("registered");
        for key in entry.option_names(&topo) {
            if !doc.contains(&format!("`{key}`")) {
                missing.push(format!("{name}:{key}"));
            }
        }
    }
    assert!(missing.is_empty(), "not in docs/POLICIES.md: {missing:?}");
}

/// Every option of every placement policy has a row in docs/PLACEMENT.md's parameter table of
/// that policy, whose default is the code's (an option absent by default says "absent").
#[test]
fn placement_parameters_are_documented_with_the_codes_defaults() {
    let doc = std::fs::read_to_string(repo().join("docs/PLACEMENT.md")).expect("PLACEMENT.md");
    let defaults = toml::Value::try_from(policy::PlacementConfig::default()).expect("toml");
    let mut wrong = Vec::new();
    for name in policy::registry::names() {
        let entry = policy::registry::find(name).expect("registered");
        if entry.options.is_empty() {
            continue;
        }
        let heading = format!("### Parameters (`[placement.{name}]`");
        let Some(start) = doc.find(&heading) else {
            wrong.push(format!("no section {heading}"));
            continue;
        };
        let section = &doc[start..];
        let section = &section[..section[1..].find("\n### ").map_or(section.len(), |e| e + 1)];
        let table = defaults.get(name).and_then(toml::Value::as_table);
        for key in entry.options {
            let Some(row) = section
                .lines()
                .find(|l| l.starts_with(&format!("| `{key}` |")))
            else {
                wrong.push(format!("{name}.{key}: no row"));
                continue;
            };
            let documented = row.split('|').nth(2).unwrap_or("").trim().to_string();
            let code = match table.and_then(|t| t.get(*key)) {
                None => "absent".to_string(),
                Some(toml::Value::Float(f)) if f.fract() == 0.0 => format!("{f:.0}"),
                Some(v) => v.to_string(),
            };
            if !documented.starts_with(&code) {
                wrong.push(format!(
                    "{name}.{key}: docs say {documented:?}, code {code:?}"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/PLACEMENT.md parameter tables: {wrong:#?}"
    );
}

/// The subcommands `homenode --help` lists.
fn subcommands() -> Vec<String> {
    let help = crate::common::ok(&["--help"]);
    let list = help.split("Commands:").nth(1).expect("a Commands: section");
    let names: Vec<String> = list
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(String::from)
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    names
}

/// `homenode man --out DIR` writes homenode.1 naming every subcommand, and one page for each.
#[test]
fn man_pages_cover_every_subcommand() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("man-pages");
    let _ = std::fs::remove_dir_all(&dir);
    crate::common::ok(&["man", "--out", &dir.to_string_lossy()]);
    let top = std::fs::read_to_string(dir.join("homenode.1")).expect("homenode.1");
    assert!(top.starts_with(".ie") || top.contains(".TH"), "{top}");
    for name in subcommands() {
        assert!(top.contains(&name), "homenode.1 lacks {name}");
        assert!(
            dir.join(format!("homenode-{name}.1")).exists(),
            "no page for {name}"
        );
    }
}

/// `homenode completions SHELL` completes every subcommand.
#[test]
fn completions_name_every_subcommand() {
    let names = subcommands();
    for shell in ["bash", "zsh", "fish"] {
        let script = crate::common::ok(&["completions", shell]);
        for name in &names {
            assert!(script.contains(name.as_str()), "{shell}: no {name}");
        }
    }
    let o = crate::common::homenode(&["completions", "tcsh"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
}

/// Every report committed under docs/results/ was written by `homenode experiments run NAME
/// --out docs/results/NAME` of this version: its markdown and its JSON name the version, the
/// command and the seed, and docs/EXPERIMENTS.md links to it.
#[test]
fn committed_results_name_the_version_and_command_that_made_them() {
    let version = env!("CARGO_PKG_VERSION");
    let dir = repo().join("docs/results");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("docs/results/")
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no reports under {}", dir.display());
    let guide = std::fs::read_to_string(repo().join("docs/EXPERIMENTS.md")).expect("guide");
    for name in &names {
        let read = |f: &str| {
            let p = dir.join(name).join(f);
            std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        };
        let command = format!("homenode experiments run {name} --out docs/results/{name}");
        let md = read("report.md");
        let stamp = format!("Generated by homenode {version} with `{command}");
        assert!(
            md.lines().take(8).any(|l| l.starts_with(&stamp)),
            "docs/results/{name}/report.md does not begin with `{stamp}`: regenerate it"
        );
        let json: serde_json::Value = serde_json::from_str(&read("results.json")).expect("JSON");
        let by = &json["generated_by"];
        assert_eq!(by["version"], version, "docs/results/{name}/results.json");
        assert!(
            by["command"]
                .as_str()
                .is_some_and(|c| c.starts_with(&command)),
            "docs/results/{name}/results.json: {by}"
        );
        assert_eq!(by["seed"], json["spec"]["seed"], "docs/results/{name}");
        assert!(
            guide.contains(&format!("(results/{name}/report.md)")),
            "docs/EXPERIMENTS.md does not link to results/{name}/report.md"
        );
    }
}
