//! `homenode man` and `homenode completions`: generated from the clap definition, so they
//! list every subcommand and option the binary has.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;

#[derive(Args)]
pub struct ManArgs {
    /// Directory to write the pages into (created if missing).
    #[arg(long, value_name = "DIR", default_value = ".")]
    out: PathBuf,
}

#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell.
    shell: clap_complete::Shell,
}

/// Writes `homenode.1` and `homenode-SUBCOMMAND.1` for every subcommand into `--out`.
pub fn man(a: &ManArgs, cmd: clap::Command) -> Result<()> {
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("{}: cannot create the directory", a.out.display()))?;
    clap_mangen::generate_to(cmd, &a.out)
        .with_context(|| format!("{}: cannot write the man pages", a.out.display()))?;
    eprintln!("homenode: man pages written to {}", a.out.display());
    Ok(())
}

/// Prints the completion script of `--shell` on stdout.
pub fn completions(a: &CompletionsArgs, mut cmd: clap::Command) -> Result<()> {
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "homenode", &mut buf);
    out!("{}", String::from_utf8_lossy(&buf));
    Ok(())
}
