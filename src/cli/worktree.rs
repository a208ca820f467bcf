//! `nightshift worktree list | show | remove`: the worktrees sessions were started in with
//! `--worktree`, where their work stands, and removing one without losing work (see
//! `nightshift::git::worktree`).

use std::path::PathBuf;
use std::process::ExitCode;

use nightshift::git::worktree::{self, Worktree};
use nightshift::store::Store;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Every worktree a session was started in, with where its work stands
    List {
        /// One JSON object per worktree
        #[arg(long)]
        json: bool,
    },
    /// One worktree (by its name, its branch, or its session): its work, and how to look at it or merge it
    Show { name: String },
    /// Remove a worktree; refused while it holds uncommitted work or commits neither merged nor pushed
    Remove {
        name: String,
        /// Remove it anyway: its uncommitted files are kept under a salvage ref first, and a branch with
        /// commits of its own is kept
        #[arg(long)]
        force: bool,
    },
}

/// A session's worktree, as its contract keeps it.
struct Made {
    session: String,
    worktree: Worktree,
}

/// The worktrees of the journal's sessions, newest first, each once.
fn all(store: &Store) -> anyhow::Result<Vec<Made>> {
    let mut out: Vec<Made> = Vec::new();
    for row in store.sessions()? {
        if let Some(w) = store.worktree(&row.id)? {
            if !out.iter().any(|m| m.worktree.path == w.path) {
                out.push(Made { session: row.id.clone(), worktree: w });
            }
        }
    }
    Ok(out)
}

fn name_of(w: &Worktree) -> &str {
    w.branch.strip_prefix("nightshift/").unwrap_or(&w.branch)
}

fn find(store: &Store, name: &str) -> anyhow::Result<Made> {
    let found: Vec<Made> = all(store)?
        .into_iter()
        .filter(|m| name_of(&m.worktree) == name || m.worktree.branch == name || m.session.starts_with(name))
        .collect();
    match found.len() {
        1 => Ok(found.into_iter().next().expect("one")),
        0 => anyhow::bail!("no worktree is called {name}; `nightshift worktree list` shows them"),
        _ => anyhow::bail!("{name} names {} worktrees; give its whole name", found.len()),
    }
}

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let (_, store) = super::open_store(state_dir)?;
    match args.action {
        Action::List { json } => {
            let made = all(&store)?;
            if made.is_empty() && !json {
                println!("No session was started in a worktree (`nightshift run --worktree`).");
            }
            for m in made {
                let s = worktree::standing(&m.worktree);
                if json {
                    let value = serde_json::json!({"session": m.session, "worktree": m.worktree, "standing": s});
                    println!("{value}");
                } else {
                    println!(
                        "{}  {}  session {}  {}",
                        m.worktree.branch,
                        m.worktree.path.display(),
                        m.session,
                        s.words()
                    );
                }
            }
        }
        Action::Show { name } => {
            let m = find(&store, &name)?;
            let (w, s) = (&m.worktree, worktree::standing(&m.worktree));
            println!(
                "{}: session {}, made from {} of {}",
                w.branch,
                m.session,
                &w.base[..w.base.len().min(12)],
                w.repo.display()
            );
            println!("  where:  {}", w.path.display());
            println!("  work:   {}", s.words());
            println!("  look:   {}", w.look());
            println!("  merge:  {}", w.merge());
            for snapshot in nightshift::git::salvage::list(&w.repo, Some(&m.session)) {
                println!("  kept by salvage: {} ({} file(s))", snapshot.reference, snapshot.files.len());
            }
        }
        Action::Remove { name, force } => {
            let m = find(&store, &name)?;
            let removed = worktree::remove(&m.worktree, force, &m.session).map_err(anyhow::Error::msg)?;
            println!("Removed {}.", m.worktree.path.display());
            if let Some(reference) = removed.salvaged {
                println!("Its uncommitted files are kept as {reference} (`nightshift salvage show {reference}`).");
            }
            if removed.branch_deleted {
                println!("Its branch {} is deleted too: it held nothing that is not merged.", m.worktree.branch);
            } else {
                println!(
                    "Its branch {} is kept, with its commits (`git branch -D {}` deletes it).",
                    m.worktree.branch, m.worktree.branch
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
