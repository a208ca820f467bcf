//! `nightshift salvage list|show|restore`: the uncommitted work Nightshift kept when a session's
//! life ended badly, was stopped, or was about to `/clear` (refs under `refs/nightshift/salvage/`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use nightshift::git::salvage::{self, Snapshot};
use nightshift::store::{EventQuery, Store};
use nightshift::{Event, EventKind};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// The snapshots, per session, with their files and size
    List {
        /// Only this session (an id or a unique prefix)
        session: Option<String>,
    },
    /// A snapshot's change as a patch (the latest of the session unless /N is given)
    Show {
        /// SESSION or SESSION/N
        snapshot: String,
    },
    /// Put a snapshot back: into the working tree when it is clean, or onto a new branch
    Restore {
        /// SESSION or SESSION/N
        snapshot: String,
        /// Create this branch at the snapshot instead (the working tree is left alone)
        #[arg(long, value_name = "NAME")]
        branch: Option<String>,
    },
}

/// The repositories a session's snapshots were kept in, from its journal.
fn repos_of(store: &Store, session: &str) -> anyhow::Result<Vec<PathBuf>> {
    let mut repos: Vec<PathBuf> = Vec::new();
    for e in store.events(&EventQuery { session: Some(session.to_string()), ..Default::default() })? {
        let Ok(event) = serde_json::from_str::<Event>(&e.body) else { continue };
        if let EventKind::Salvaged { repo, .. } = event.kind {
            let repo = PathBuf::from(repo);
            if !repos.contains(&repo) {
                repos.push(repo);
            }
        }
    }
    Ok(repos)
}

fn snapshots(store: &Store, session: &str) -> anyhow::Result<Vec<Snapshot>> {
    Ok(repos_of(store, session)?.iter().flat_map(|r| salvage::list(r, Some(session))).collect())
}

/// `SESSION` (its latest snapshot) or `SESSION/N`.
fn find(store: &Store, spec: &str) -> anyhow::Result<Snapshot> {
    let (session, n) = match spec.split_once('/') {
        Some((s, n)) => {
            let n: u64 =
                n.parse().with_context(|| format!("`{n}` is not a snapshot number; write SESSION/N, e.g. {s}/1"))?;
            (s, Some(n))
        }
        None => (spec, None),
    };
    let row = store.find_session(session)?;
    let all = snapshots(store, &row.id)?;
    let found = match n {
        Some(n) => all.into_iter().find(|s| s.reference.ends_with(&format!("/{n}"))),
        None => all.into_iter().last(),
    };
    found.ok_or_else(|| {
        anyhow::anyhow!("session {} has no such snapshot; `nightshift salvage list {}` lists them", row.id, row.id)
    })
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let (_, store) = super::open_store(state_dir)?;
    match args.action {
        Action::List { session } => {
            let rows = match session {
                Some(s) => vec![store.find_session(&s)?],
                None => store.sessions()?,
            };
            let mut shown = 0;
            for row in rows {
                for s in snapshots(&store, &row.id)? {
                    shown += 1;
                    let n = s.reference.rsplit('/').next().unwrap_or("?");
                    println!(
                        "{}/{n}  {}  {} file(s), {}  {}",
                        row.id,
                        s.repo.display(),
                        s.files.len(),
                        nightshift::units::bytes(s.bytes),
                        s.reference
                    );
                    for f in &s.files {
                        println!("    {} {}", f.status, f.path);
                    }
                }
            }
            if shown == 0 {
                println!("no salvage snapshots");
            }
        }
        Action::Show { snapshot } => {
            let s = find(&store, &snapshot)?;
            let text = salvage::show(&s.repo, &s.reference)
                .with_context(|| format!("git could not show {} in {}", s.reference, s.repo.display()))?;
            print!("{text}");
        }
        Action::Restore { snapshot, branch } => {
            let s = find(&store, &snapshot)?;
            match branch {
                Some(branch) => {
                    salvage::restore_to_branch(&s.repo, &s.reference, &branch).map_err(anyhow::Error::msg)?;
                    println!(
                        "branch {branch} in {} now holds {} (your working tree is as it was)",
                        s.repo.display(),
                        s.reference
                    );
                }
                None => {
                    salvage::restore_to_worktree(&s.repo, &s.reference).map_err(anyhow::Error::msg)?;
                    println!(
                        "{} file(s) of {} written into {} (not staged)",
                        s.files.len(),
                        s.reference,
                        s.repo.display()
                    );
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
