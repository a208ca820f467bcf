//! Whether one program a line runs breaks one rule: the rule's command and flags, then its `when`
//! against the program's words, the directories it runs in and what their repositories say.
//! A word only a run can tell satisfies whatever it could.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::{Facts, Matcher, Repo, Rule, Rules, When};
use crate::hooks::shell::{basename, find_roots, normalize, resolve, Invocation, Word};

pub(super) struct Judge<'a> {
    rules: &'a Rules,
    facts: &'a Facts,
    /// The directories whose repositories were asked about, when that is what is wanted.
    asked: Option<RefCell<BTreeSet<PathBuf>>>,
}

/// An invocation as one rule sees it.
struct View<'a> {
    /// Its words after the rule's command words.
    args: &'a [Word],
    /// Where it runs (after git's `-C`).
    dirs: Vec<Option<PathBuf>>,
    /// Its repository is not the one of its directory (`--git-dir`, `GIT_DIR`).
    elsewhere: bool,
    /// A word of its command only a run can tell (`git $SUB`, a git alias): any words may follow.
    vague: bool,
}

/// Where a `git push` goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Branch(String),
    /// The branch checked out (no refspec, `HEAD`).
    Current,
    /// Any branch (`--all`, `--mirror`, a word only a run can tell).
    Any,
    /// No branch (a tag, another ref).
    Other,
}

#[derive(Debug, Clone)]
struct Dest {
    target: Target,
    forced: bool,
    deleted: bool,
}

impl<'a> Judge<'a> {
    pub(super) fn new(rules: &'a Rules, facts: &'a Facts) -> Self {
        Self { rules, facts, asked: None }
    }

    /// A judge that notes the directories whose repositories it would need.
    pub(super) fn asking(rules: &'a Rules, facts: &'a Facts) -> Self {
        Self { rules, facts, asked: Some(RefCell::new(BTreeSet::new())) }
    }

    pub(super) fn asked(self) -> BTreeSet<PathBuf> {
        self.asked.map(RefCell::into_inner).unwrap_or_default()
    }

    /// Whether `inv` breaks `rule`: `Some(unsure)`, `unsure` when a word only a run can tell was
    /// taken for the worst.
    pub(super) fn breaks(&self, rule: &Rule, inv: &Invocation) -> Option<bool> {
        let view = self.view(rule, inv)?;
        let flags = rule.flags.iter().all(|alternatives| view.vague || has_flag(view.args, alternatives));
        if !flags || !self.when(rule, inv, &view) {
            return None;
        }
        let unsure = view.vague
            || inv.program == Word::Unknown
            || inv.args.contains(&Word::Unknown)
            || view.dirs.iter().any(Option::is_none);
        Some(unsure)
    }

    fn view<'i>(&self, rule: &Rule, inv: &'i Invocation) -> Option<View<'i>> {
        let mut view = View { args: &inv.args, dirs: inv.dirs.to_vec(), elsewhere: false, vague: false };
        view.elsewhere = inv.env.iter().any(|(name, _)| matches!(name.as_str(), "GIT_DIR" | "GIT_WORK_TREE"));
        let (program, words): (&str, &[String]) = match &rule.matcher {
            Matcher::Unreadable => return None,
            Matcher::Command { program, words } => (program, words),
            Matcher::Pattern(re) => {
                if !re.is_match(&shown(inv)) {
                    return None;
                }
                let git = inv.program.lit() == Some("git");
                if git {
                    let alias = self.git_options(&mut view);
                    view.vague |= alias;
                }
                return Some(view);
            }
        };
        match &inv.program {
            Word::Lit(p) if p == program => {}
            Word::Lit(_) => return None,
            // A program only a run names may be this one.
            _ => {}
        }
        let mut alias = false;
        if program == "git" {
            alias = self.git_options(&mut view);
        }
        if alias && !words.is_empty() {
            // `git -c alias.x='push -f' x`: the subcommand may be any.
            view.vague = true;
            view.args = view.args.get(1..).unwrap_or_default();
            return Some(view);
        }
        for word in words {
            match view.args.first() {
                Some(Word::Lit(w)) if w == word => view.args = &view.args[1..],
                Some(Word::Lit(_)) | None => return None,
                Some(_) => {
                    view.vague = true;
                    view.args = &view.args[1..];
                    break;
                }
            }
        }
        Some(view)
    }

    /// Past git's own options (`-C DIR`, `-c k=v`, `--git-dir`, …): where it runs, whether its
    /// repository is elsewhere. True when its subcommand may be an alias given on the line (or a
    /// word only a run can tell).
    fn git_options(&self, view: &mut View) -> bool {
        let mut alias = false;
        loop {
            match view.args.first() {
                Some(Word::Lit(a)) => match a.as_str() {
                    "-C" => {
                        view.dirs = match view.args.get(1) {
                            Some(Word::Lit(p)) => view.dirs.iter().map(|d| resolve(d.as_deref(), p)).collect(),
                            _ => vec![None],
                        };
                        view.args = view.args.get(2..).unwrap_or_default();
                    }
                    "-c" | "--config-env" => {
                        alias |= view
                            .args
                            .get(1)
                            .and_then(Word::lit)
                            .is_none_or(|kv| kv.to_lowercase().starts_with("alias."));
                        view.args = view.args.get(2..).unwrap_or_default();
                    }
                    "--git-dir" | "--work-tree" => {
                        view.elsewhere = true;
                        view.args = view.args.get(2..).unwrap_or_default();
                    }
                    "--namespace" | "--super-prefix" => view.args = view.args.get(2..).unwrap_or_default(),
                    a if a.starts_with("--git-dir=") || a.starts_with("--work-tree=") => {
                        view.elsewhere = true;
                        view.args = &view.args[1..];
                    }
                    a if a.starts_with("--config-env=") => {
                        alias |= a.to_lowercase().contains("=alias.");
                        view.args = &view.args[1..];
                    }
                    a if a.starts_with('-') => view.args = &view.args[1..],
                    _ => return alias,
                },
                Some(_) => return true,
                None => return alias,
            }
        }
    }

    fn when(&self, rule: &Rule, inv: &Invocation, view: &View) -> bool {
        match rule.when {
            When::Always => true,
            When::Unreadable => false,
            When::OnDefaultBranch => self.on_protected(view),
            When::NamesDefaultBranch => {
                view.vague
                    || positional(view.args).any(|w| match w {
                        Word::Lit(name) => self.protected(name.strip_prefix("refs/heads/").unwrap_or(name), view),
                        _ => true,
                    })
            }
            When::NamesBranch => {
                view.vague
                    || positional(view.args).any(|w| match w {
                        Word::Lit(name) => name.starts_with("refs/heads/") || name == "HEAD" || name == "@",
                        _ => true,
                    })
            }
            When::DefaultBranch | When::ForcePushesDefaultBranch | When::DeletesDefaultBranch => {
                let args = match &rule.matcher {
                    // A pattern's `git … push …`: what follows `push`.
                    Matcher::Pattern(_) => {
                        let at = view.args.iter().position(|w| w.lit() == Some("push")).map_or(0, |i| i + 1);
                        &view.args[at.min(view.args.len())..]
                    }
                    _ => view.args,
                };
                let dests = if view.vague {
                    vec![Dest { target: Target::Any, forced: true, deleted: true }]
                } else {
                    push_dests(args)
                };
                dests.iter().any(|d| {
                    let counts = match rule.when {
                        When::ForcePushesDefaultBranch => d.forced,
                        When::DeletesDefaultBranch => d.deleted,
                        _ => true,
                    };
                    counts && self.protected_target(&d.target, view)
                })
            }
            When::OutsideTree => {
                if view.vague {
                    return true;
                }
                let find = matches!(&rule.matcher, Matcher::Command { program, .. } if program == "find")
                    || (matches!(rule.matcher, Matcher::Pattern(_)) && inv.program.lit() == Some("find"));
                if find {
                    self.finds_outside(view)
                } else {
                    self.removes_outside(view)
                }
            }
        }
    }

    /// What the repository of `dir` says (`None`: not known).
    fn repo(&self, dir: Option<&Path>, view: &View) -> Option<&'a Repo> {
        if let Some(asked) = &self.asked {
            // Every directory it may run in: the answer for one may lead to asking the next.
            asked.borrow_mut().extend(view.dirs.iter().flatten().map(|d| normalize(d)));
        }
        let dir = dir.filter(|_| !view.elsewhere)?;
        self.facts.repos.get(dir)
    }

    /// Whether `name` is the default branch or a protected one, wherever the command runs (a
    /// repository not known may have any default).
    fn protected(&self, name: &str, view: &View) -> bool {
        let listed = self.rules.protected.iter().any(|p| glob(p, name) || glob(name, p));
        listed
            || view.dirs.iter().any(|d| match self.repo(d.as_deref(), view) {
                None => true,
                Some(repo) => repo.default_branch.as_deref().is_some_and(|b| glob(name, b)),
            })
    }

    fn protected_in(&self, name: &str, repo: &Repo) -> bool {
        self.rules.protected.iter().any(|p| glob(p, name)) || repo.default_branch.as_deref() == Some(name)
    }

    /// Whether the branch checked out where the command runs is protected (not known: it may be).
    fn on_protected(&self, view: &View) -> bool {
        view.dirs.iter().any(|d| match self.repo(d.as_deref(), view) {
            None => true,
            Some(repo) => repo.branch.as_deref().is_some_and(|b| self.protected_in(b, repo)),
        })
    }

    fn protected_target(&self, target: &Target, view: &View) -> bool {
        match target {
            Target::Any => true,
            Target::Branch(name) => self.protected(name, view),
            Target::Current => self.on_protected(view),
            Target::Other => false,
        }
    }

    /// A path inside the tree, not the tree itself nor its repository.
    fn strictly_inside(&self, path: &Path) -> bool {
        self.within(path) && path != self.facts.tree
    }

    /// The tree or a path inside it, not its repository.
    fn within(&self, path: &Path) -> bool {
        let tree = &self.facts.tree;
        tree.is_absolute() && path.starts_with(tree) && !path.starts_with(tree.join(".git"))
    }

    /// `rm`'s operands (or another program's): any outside the tree.
    fn removes_outside(&self, view: &View) -> bool {
        positional(view.args).any(|w| match w {
            // `rm` refuses `.` and `..` (POSIX): nothing is removed.
            Word::Lit(p) if matches!(basename(p), "." | "..") => false,
            Word::Lit(p) => {
                view.dirs.iter().any(|d| resolve(d.as_deref(), p).is_none_or(|p| !self.strictly_inside(&p)))
            }
            Word::Found { root, with_root } => !self.within(root) || (*with_root && !self.strictly_inside(root)),
            Word::Unknown => true,
        })
    }

    /// `find … -delete` from a starting point outside the tree.
    fn finds_outside(&self, view: &View) -> bool {
        let (roots, follows, expression) = find_roots(view.args);
        let expression = &view.args[expression..];
        let deletes = expression.iter().any(|w| matches!(w, Word::Unknown) || w.lit() == Some("-delete"));
        if !deletes {
            return false;
        }
        if follows {
            return true;
        }
        let dot = Word::Lit(".".into());
        let roots = if roots.is_empty() { vec![&dot] } else { roots };
        roots.iter().any(|root| match root {
            Word::Lit(p) => view.dirs.iter().any(|d| resolve(d.as_deref(), p).is_none_or(|p| !self.within(&p))),
            Word::Found { root, .. } => !self.within(root),
            Word::Unknown => true,
        })
    }
}

/// The words that are not options (all of them after `--`).
fn positional(args: &[Word]) -> impl Iterator<Item = &Word> {
    let end = args.iter().position(|w| w.lit() == Some("--"));
    let (before, after) = match end {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &args[args.len()..]),
    };
    before.iter().filter(|w| !matches!(w, Word::Lit(a) if a.starts_with('-') && a.len() > 1)).chain(after)
}

/// Whether `args` carry one of `alternatives` before `--`: a long flag (`--force`, with or
/// without `=…`), a short one alone or in a cluster (`-f` in `-fdx`), or a word only a run can
/// tell (it may be any).
fn has_flag(args: &[Word], alternatives: &[String]) -> bool {
    args.iter().take_while(|w| w.lit() != Some("--")).any(|w| {
        let Word::Lit(a) = w else { return matches!(w, Word::Unknown) };
        alternatives.iter().any(|alt| {
            if alt.starts_with("--") {
                a == alt || a.strip_prefix(alt.as_str()).is_some_and(|rest| rest.starts_with('='))
            } else if let Some(c) = alt.strip_prefix('-').filter(|c| c.chars().count() == 1) {
                a == alt || (a.starts_with('-') && !a.starts_with("--") && a[1..].contains(c))
            } else {
                a == alt
            }
        })
    })
}

/// Where `git push ARGS` goes.
fn push_dests(args: &[Word]) -> Vec<Dest> {
    let (mut force, mut delete, mut mirror, mut all, mut prune, mut dry) = (false, false, false, false, false, false);
    let mut repo_given = false;
    let mut positional: Vec<&Word> = Vec::new();
    let mut dests = Vec::new();
    let mut i = 0;
    let mut options = true;
    while let Some(w) = args.get(i) {
        i += 1;
        let Word::Lit(a) = w else {
            // It may be a flag, a remote or any refspec.
            dests.push(Dest { target: Target::Any, forced: true, deleted: true });
            positional.push(w);
            continue;
        };
        if !options || !a.starts_with('-') || a == "-" {
            positional.push(w);
            continue;
        }
        if a == "--" {
            options = false;
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, value) = long.split_once('=').map_or((long, None), |(n, v)| (n, Some(v)));
            match name {
                "force" | "force-with-lease" | "force-if-includes" => force = true,
                "delete" => delete = true,
                "mirror" => mirror = true,
                "all" | "branches" => all = true,
                "prune" => prune = true,
                "dry-run" => dry = true,
                "repo" => {
                    repo_given = true;
                    if value.is_none() {
                        i += 1;
                    }
                }
                "receive-pack" | "exec" | "push-option" if value.is_none() => i += 1,
                _ => {}
            }
            continue;
        }
        for (j, c) in a.char_indices().skip(1) {
            match c {
                'f' => force = true,
                'd' => delete = true,
                'n' => dry = true,
                'o' => {
                    if j + 1 == a.len() {
                        i += 1;
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    if dry {
        return Vec::new();
    }
    if mirror {
        dests.push(Dest { target: Target::Any, forced: true, deleted: true });
    }
    if all {
        dests.push(Dest { target: Target::Any, forced: force, deleted: prune });
    }
    if prune {
        dests.push(Dest { target: Target::Any, forced: false, deleted: true });
    }
    let refspecs = if repo_given { &positional[..] } else { positional.get(1..).unwrap_or_default() };
    if refspecs.is_empty() && !all && !mirror {
        dests.push(Dest { target: Target::Current, forced: force, deleted: delete });
    }
    let mut specs = refspecs.iter();
    while let Some(spec) = specs.next() {
        let Word::Lit(spec) = spec else { continue };
        if spec == "tag" {
            // `tag NAME`: a tag, no branch.
            specs.next();
            continue;
        }
        if delete {
            dests.push(Dest { target: branch(spec), forced: force, deleted: true });
            continue;
        }
        let plus = spec.starts_with('+');
        let spec = spec.trim_start_matches('+');
        let (src, dst) = spec.split_once(':').unwrap_or((spec, spec));
        if spec == ":" {
            // "Matching" branches: any the remote has.
            dests.push(Dest { target: Target::Any, forced: force || plus, deleted: false });
            continue;
        }
        dests.push(Dest { target: branch(dst), forced: force || plus, deleted: src.is_empty() });
    }
    dests
}

/// The branch a push's destination names (`refs/tags/…` and other refs name none).
fn branch(dst: &str) -> Target {
    match dst {
        "HEAD" | "@" => Target::Current,
        d if d.starts_with("refs/heads/") => Target::Branch(d["refs/heads/".len()..].to_string()),
        d if d.starts_with("refs/") => Target::Other,
        d => Target::Branch(d.to_string()),
    }
}

/// Whether `pattern` (`*` for any text) matches `text` whole.
fn glob(pattern: &str, text: &str) -> bool {
    if text.is_empty() && !pattern.is_empty() {
        return false;
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || !text[first.len()..].ends_with(last) || text.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// The program and its words as a pattern sees them (`$?` for an unknown one).
fn shown(inv: &Invocation) -> String {
    let word = |w: &Word| match w {
        Word::Lit(s) => s.clone(),
        Word::Unknown => "$?".into(),
        Word::Found { root, .. } => format!("{}/*", root.display()),
    };
    std::iter::once(&inv.program).chain(&inv.args).map(word).collect::<Vec<_>>().join(" ")
}
