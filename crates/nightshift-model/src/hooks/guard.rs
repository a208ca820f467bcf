//! The guard of unattended sessions: the Bash commands a `PreToolUse` hook refuses while nobody
//! watches (force pushes to the default branch, deleting it, a hard reset there, `rm -r` outside
//! the working tree, merging or releasing on GitHub, …). The rules are data (`guard.toml` beside
//! this file, and the user's own file); deciding is pure, given what the repositories say.
//!
//! A command line is first read as a shell would run it ([`super::shell`]): the rules judge the
//! programs it starts, their words and the directories they run in, never the raw text. A word
//! only a run can tell is judged on the safe side: it may be the flag, the branch or the path a
//! rule refuses. What the line leaves unreadable is refused by the `unreadable` rule.

mod judge;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde::Deserialize;

const BUILTIN: &str = include_str!("guard.toml");
/// The most repositories one command's facts are gathered from.
pub const MAX_REPOS: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum When {
    Always,
    /// A `git push` to the default branch (or a protected one).
    DefaultBranch,
    /// A `git push` that forces it.
    ForcePushesDefaultBranch,
    /// A `git push` that deletes it.
    DeletesDefaultBranch,
    /// A word names it.
    NamesDefaultBranch,
    /// A word names a branch.
    NamesBranch,
    /// The branch checked out where the command runs is it.
    OnDefaultBranch,
    /// It removes a path outside the working tree.
    #[serde(alias = "outside_cwd")]
    OutsideTree,
    /// The line cannot be read to its end.
    Unreadable,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    kind: String,
    what: String,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    pattern: Option<String>,
    #[serde(default)]
    flags: Vec<String>,
    when: When,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    protected: Vec<String>,
    #[serde(default)]
    rule: Vec<RuleFile>,
    #[serde(default)]
    disable: Vec<String>,
}

/// What a rule matches.
#[derive(Debug, Clone)]
enum Matcher {
    /// The program and the words after it (`git push`).
    Command { program: String, words: Vec<String> },
    /// A regular expression over the program and its words, joined by spaces.
    Pattern(Regex),
    /// The line cannot be read.
    Unreadable,
}

#[derive(Debug, Clone)]
struct Rule {
    kind: String,
    what: String,
    matcher: Matcher,
    /// Every entry needed, each one of its alternatives.
    flags: Vec<Vec<String>>,
    when: When,
}

/// The compiled rules.
#[derive(Debug, Clone)]
pub struct Rules {
    rules: Vec<Rule>,
    /// Branches that count as the default one (`*` matches any text).
    protected: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
}

/// What the session and the repositories say, for the rules that depend on it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Where the agent's shell is (the hook payload's `cwd`): the line's paths and `cd`s start here.
    pub cwd: PathBuf,
    /// The session's working tree: what `rm -r` and `find -delete` must stay inside.
    pub tree: PathBuf,
    pub home: Option<PathBuf>,
    /// What the repository of each directory a git command runs in says ([`Rules::repos_needed`]).
    pub repos: BTreeMap<PathBuf, Repo>,
}

/// What a repository says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Repo {
    /// The branch checked out (`None`: detached, or not a repository).
    pub branch: Option<String>,
    /// The default branch (`origin/HEAD`, else `main` or `master` where they exist).
    pub default_branch: Option<String>,
}

impl Facts {
    /// Facts with the repository of `dir` as the git facts say: `(branch, default branch)`.
    pub fn with_repo(mut self, dir: &Path, (branch, default_branch): (Option<String>, Option<String>)) -> Self {
        self.repos.insert(super::shell::normalize(dir), Repo { branch, default_branch });
        self
    }
}

/// A refused command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub kind: String,
    pub what: String,
    /// What the agent is told.
    pub reason: String,
}

fn parse(file: &str, text: &str) -> Result<File, GuardError> {
    toml::from_str(text).map_err(|e| GuardError::Invalid {
        file: file.to_string(),
        message: format!(
            "{}; fix it, or remove the file to use the built-in rules",
            crate::toml_error::one_line(text, &e)
        ),
    })
}

impl Rules {
    /// The built-in rules.
    pub fn builtin() -> Self {
        let file = parse("built-in guard.toml", BUILTIN).expect("the built-in guard parses");
        let rules = compile(file.rule, "built-in guard.toml").expect("the built-in guard compiles");
        Self { rules, protected: file.protected }
    }

    /// The built-in rules with the user's guard file added (`text`, named `file` in errors): its
    /// rules and protected branches, and its `disable`d kinds left out.
    pub fn with_user(file: &str, text: &str) -> Result<Self, GuardError> {
        let mut rules = Self::builtin();
        let user = parse(file, text)?;
        rules.rules.retain(|r| !user.disable.contains(&r.kind));
        rules.rules.extend(compile(user.rule, file)?);
        rules.protected.extend(user.protected);
        Ok(rules)
    }

    /// The directories whose repositories the rules ask about for `command` run from `cwd` (at
    /// most [`MAX_REPOS`]): gather them into [`Facts::repos`] before [`Rules::check`].
    pub fn repos_needed(&self, command: &str, cwd: &Path, home: Option<&Path>) -> Vec<PathBuf> {
        let facts = Facts { cwd: cwd.to_path_buf(), home: home.map(Path::to_path_buf), ..Facts::default() };
        let parsed = self.read(command, &facts);
        let judge = judge::Judge::asking(self, &facts);
        for inv in &parsed.invocations {
            for rule in &self.rules {
                judge.breaks(rule, inv);
            }
        }
        judge.asked().into_iter().take(MAX_REPOS).collect()
    }

    /// The first rule a Bash command breaks, if any.
    pub fn check(&self, command: &str, facts: &Facts) -> Option<Denial> {
        let parsed = self.read(command, facts);
        let judge = judge::Judge::new(self, facts);
        for inv in &parsed.invocations {
            for rule in &self.rules {
                if let Some(unsure) = judge.breaks(rule, inv) {
                    return Some(denial(rule, &rule.what, Judged::Broken { unsure }));
                }
            }
        }
        let why = parsed.unreadable?;
        let rule = self.rules.iter().find(|r| matches!(r.matcher, Matcher::Unreadable))?;
        Some(denial(rule, &format!("{} ({why})", rule.what), Judged::Unreadable(&why)))
    }

    fn read(&self, command: &str, facts: &Facts) -> super::shell::Parsed {
        // A directory that is not absolute tells nothing.
        let cwd = if facts.cwd.is_absolute() { facts.cwd.as_path() } else { Path::new("") };
        let mut parsed = super::shell::parse(command, cwd, facts.home.as_deref().filter(|h| h.is_absolute()));
        if !facts.cwd.is_absolute() {
            for inv in &mut parsed.invocations {
                inv.dirs = std::rc::Rc::new(inv.dirs.iter().map(|d| d.clone().filter(|d| d.is_absolute())).collect());
            }
        }
        parsed
    }
}

/// What the agent is told when the guard could not judge its command (`why`: no Nightshift to ask,
/// no answer in time, …): it was refused.
pub fn unreachable_reason(why: &str) -> String {
    format!(
        "Nightshift's guard could not check this command ({why}), and a guarded session runs nothing the guard \
         has not checked, so it was refused. Try it again in a while; if it keeps being refused, leave it for the \
         user (note it in your handoff or progress notes) and carry on with the rest of the work."
    )
}

/// How a rule came to refuse.
enum Judged<'a> {
    /// The command breaks it; `unsure` when a word only a run can tell was taken for the worst.
    Broken { unsure: bool },
    /// The line cannot be read, for this reason.
    Unreadable(&'a str),
}

fn denial(rule: &Rule, what: &str, judged: Judged) -> Denial {
    let reason = if let Judged::Unreadable(why) = judged {
        format!(
            "Nightshift's guard refused this: it could not read the whole command ({why}), and a session nobody \
             watches runs only what the guard can read. Write the command out plainly (no `eval` or `sh -c` of a \
             variable, no script piped into a shell), or leave it for the user (note it in your handoff or progress \
             notes) and carry on with the rest of the work."
        )
    } else {
        let unsure = if matches!(judged, Judged::Broken { unsure: true }) {
            " It could not tell what a word filled in at run time holds (a variable, a `$(…)`, what `xargs` \
             reads, a `cd` to one), so it assumed the worst; if that was not meant, write the names and paths out \
             plainly."
        } else {
            ""
        };
        format!(
            "Nightshift's guard refused this: {what} cannot be taken back, and nobody is watching this session.\
             {unsure} Do not try another way around it; leave it for the user (note it in your handoff or progress \
             notes) and carry on with the rest of the work."
        )
    };
    Denial { kind: rule.kind.clone(), what: what.to_string(), reason }
}

fn compile(file: Vec<RuleFile>, name: &str) -> Result<Vec<Rule>, GuardError> {
    let invalid = |i: usize, kind: &str, what: String| GuardError::Invalid {
        file: name.to_string(),
        message: format!("`rule[{i}]` ({kind}): {what}; fix it, or remove the file to use the built-in rules"),
    };
    file.into_iter()
        .enumerate()
        .map(|(i, r)| {
            let matcher = match (&r.command, &r.pattern, r.when) {
                (None, None, When::Unreadable) => Matcher::Unreadable,
                (Some(command), None, _) if r.when != When::Unreadable => {
                    let mut words = command.split_whitespace().map(str::to_string);
                    let Some(program) = words.next() else {
                        return Err(invalid(i, &r.kind, "`command` is empty".into()));
                    };
                    Matcher::Command { program, words: words.collect() }
                }
                (None, Some(pattern), _) if r.when != When::Unreadable => {
                    Matcher::Pattern(Regex::new(pattern).map_err(|e| {
                        let e = e.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
                        GuardError::Invalid {
                            file: name.to_string(),
                            message: format!(
                                "`rule[{i}].pattern` ({}) is not a valid regular expression ({e}); fix it, or remove \
                                 the file to use the built-in rules",
                                r.kind
                            ),
                        }
                    })?)
                }
                (_, _, When::Unreadable) => {
                    return Err(invalid(i, &r.kind, "`when = \"unreadable\"` takes no `command` or `pattern`".into()))
                }
                _ => {
                    return Err(invalid(
                        i,
                        &r.kind,
                        "give it a `command` (the program and what it does, such as \"git push\") or a `pattern`, \
                         not both"
                            .into(),
                    ))
                }
            };
            let flags = r.flags.iter().map(|f| f.split('|').map(|a| a.trim().to_string()).collect()).collect();
            Ok(Rule { kind: r.kind, what: r.what, matcher, flags, when: r.when })
        })
        .collect()
}
