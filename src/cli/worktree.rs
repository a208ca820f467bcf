//! `nightshift worktree list | show | remove`: the worktrees sessions were started in with
//! `--worktree`, where their work stands, and removing one without losing work (see
//! `nightshift::git::worktree`).

use std::path::PathBuf;
use std::process::ExitCode;

use nightshift::git::worktree;

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

pub fn run(state_dir: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let (_, store) = super::open_store(state_dir)?;
    match args.action {
        Action::List { json } => {
            // A removed one is gone from the list (its kept branch is an ordinary branch now).
            let made: Vec<_> = store.all_worktrees()?.into_iter().filter(|m| m.worktree.path.exists()).collect();
            if made.is_empty() && !json {
                println!("No worktree of a session or loop is there (`nightshift run --worktree`, `nightshift loop --worktree` make them).");
            }
            for m in made {
                let s = worktree::standing(&m.worktree);
                if json {
                    let value = serde_json::json!({"session": m.session, "worktree": m.worktree, "task": m.task, "standing": s});
                    println!("{value}");
                } else {
                    let task = m.task.as_deref().map(|t| format!("  task: {t}")).unwrap_or_default();
                    println!(
                        "{}  {}  session {}  {}{task}",
                        m.worktree.branch,
                        m.worktree.path.display(),
                        m.session,
                        s.words()
                    );
                }
            }
        }
        Action::Show { name } => {
            let m = store.find_worktree(&name).map_err(anyhow::Error::msg)?;
            let (w, s) = (&m.worktree, worktree::standing(&m.worktree));
            println!(
                "{}: session {}, made from {} of {}",
                w.branch,
                m.session,
                &w.base[..w.base.len().min(12)],
                w.repo.display()
            );
            println!("  where:  {}", w.path.display());
            if let Some(task) = &m.task {
                println!("  task:   {task}");
            }
            println!("  work:   {}", s.words());
            println!("  look:   {}", w.look());
            println!("  merge:  {}", w.merge());
            for reference in store.worktree_salvage(&m)? {
                println!("  kept by salvage: {reference} (`nightshift salvage show {reference}`)");
            }
        }
        Action::Remove { name, force } => {
            let m = store.find_worktree(&name).map_err(anyhow::Error::msg)?;
            let removed = worktree::remove(&m.worktree, force, &m.session).map_err(anyhow::Error::msg)?;
            println!("Removed {}.", m.worktree.path.display());
            if let Some(reference) = removed.salvaged {
                println!("Its uncommitted files are kept as {reference} (`nightshift salvage show {reference}`).");
            }
            if let Some(reference) = removed.kept_head {
                println!("The commits of its detached HEAD are kept as {reference} (`git log {reference}`).");
            }
            if removed.branch_deleted {
                println!("Its branch {} is deleted too: every commit of it is held elsewhere.", m.worktree.branch);
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
