//! The guard of unattended sessions: the Bash commands a `PreToolUse` hook refuses while nobody
//! watches (force pushes to the default branch, a hard reset there, deleting it, `rm -rf` outside
//! the working directory, merging or releasing on GitHub). The rules are data (`guard.toml` beside
//! this file, and the user's own file); deciding is pure, given what the repository says.

use std::path::{Component, Path, PathBuf};

use regex::Regex;
use serde::Deserialize;

const BUILTIN: &str = include_str!("guard.toml");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum When {
    Always,
    DefaultBranch,
    NamesDefaultBranch,
    OnDefaultBranch,
    OutsideCwd,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    kind: String,
    what: String,
    pattern: String,
    when: When,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    rule: Vec<RuleFile>,
    #[serde(default)]
    disable: Vec<String>,
}

#[derive(Debug, Clone)]
struct Rule {
    kind: String,
    what: String,
    pattern: Regex,
    when: When,
}

/// The compiled rules.
#[derive(Debug, Clone)]
pub struct Rules {
    rules: Vec<Rule>,
}

#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
}

/// What the repository and the session say, for the rules that depend on it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
    /// The branch checked out (`None`: detached, or not a repository).
    pub branch: Option<String>,
    /// The repository's default branch (`origin/HEAD`, else `main` or `master` where they exist).
    pub default_branch: Option<String>,
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
        Self::compile(parse("built-in guard.toml", BUILTIN).expect("the built-in guard parses"), "built-in guard.toml")
            .expect("the built-in guard compiles")
    }

    /// The built-in rules with `dir/guard.toml` added (and its `disable`d kinds left out).
    pub fn load(dir: Option<&Path>) -> Result<Self, GuardError> {
        let mut base = parse("built-in guard.toml", BUILTIN).expect("the built-in guard parses");
        let Some(path) = dir.map(|d| d.join("guard.toml")) else { return Self::compile(base, "built-in") };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Self::compile(base, "built-in"),
            Err(source) => return Err(GuardError::Read { path, source }),
        };
        let shown = path.display().to_string();
        let user = parse(&shown, &text)?;
        base.rule.retain(|r| !user.disable.contains(&r.kind));
        base.rule.extend(user.rule);
        Self::compile(base, &shown)
    }

    fn compile(file: File, name: &str) -> Result<Self, GuardError> {
        let rules = file
            .rule
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let pattern = Regex::new(&r.pattern).map_err(|e| GuardError::Invalid {
                    file: name.to_string(),
                    message: format!(
                        "`rule[{i}].pattern` ({}) is not a valid regular expression ({}); fix it, or remove the file \
                         to use the built-in rules",
                        r.kind,
                        e.to_string().split_whitespace().collect::<Vec<_>>().join(" ")
                    ),
                })?;
                Ok(Rule { kind: r.kind, what: r.what, pattern, when: r.when })
            })
            .collect::<Result<_, GuardError>>()?;
        Ok(Self { rules })
    }

    /// Whether any rule looks at the repository's branches for this command (so the caller knows to
    /// find them out before [`Rules::check`]).
    pub fn needs_branches(&self, command: &str) -> bool {
        simple_commands(command).any(|c| {
            self.rules.iter().any(|r| {
                matches!(r.when, When::DefaultBranch | When::NamesDefaultBranch | When::OnDefaultBranch)
                    && r.pattern.is_match(c)
            })
        })
    }

    /// The first rule a Bash command breaks, if any.
    pub fn check(&self, command: &str, facts: &Facts) -> Option<Denial> {
        for simple in simple_commands(command) {
            for rule in &self.rules {
                if rule.pattern.is_match(simple) && applies(rule.when, simple, facts) {
                    return Some(Denial {
                        kind: rule.kind.clone(),
                        what: rule.what.clone(),
                        reason: format!(
                            "Nightshift's guard refused this: {} cannot be taken back, and nobody is watching this \
                             session. Do not try another way around it; leave it for the user (note it in your \
                             handoff or progress notes) and carry on with the rest of the work.",
                            rule.what
                        ),
                    });
                }
            }
        }
        None
    }
}

/// The simple commands of a command line: split at `&&`, `||`, `;`, `|` and newlines, trimmed.
fn simple_commands(line: &str) -> impl Iterator<Item = &str> {
    line.split(['\n', ';', '|', '&']).map(str::trim).filter(|c| !c.is_empty())
}

fn words(command: &str) -> Vec<String> {
    command.split_whitespace().map(|w| w.trim_matches(['\'', '"']).to_string()).collect()
}

fn applies(when: When, command: &str, f: &Facts) -> bool {
    let default = f.default_branch.as_deref();
    let on_default = f.branch.is_some() && f.branch.as_deref() == default;
    match when {
        When::Always => true,
        When::OnDefaultBranch => on_default,
        When::NamesDefaultBranch => default.is_some_and(|d| words(command).iter().any(|w| w == d)),
        When::DefaultBranch => {
            let words = words(command);
            let after: Vec<&String> = words.iter().skip_while(|w| *w != "push").skip(1).collect();
            let positional: Vec<&&String> = after.iter().filter(|w| !w.starts_with('-')).collect();
            // `git push [remote] [refspec…]`: the destinations named, or the branch it is on.
            let refspecs = positional.iter().skip(1);
            let mut named = false;
            for spec in refspecs {
                named = true;
                let spec = spec.trim_start_matches('+');
                let dst = spec.rsplit_once(':').map_or(spec, |(_, d)| d);
                let dst = dst.trim_start_matches("refs/heads/");
                if Some(dst) == default || (dst == "HEAD" && on_default) {
                    return true;
                }
            }
            !named && on_default
        }
        When::OutsideCwd => rm_outside(command, f),
    }
}

/// `rm` with `-r` (recursive) of a path outside the working directory (or one it cannot tell).
fn rm_outside(command: &str, f: &Facts) -> bool {
    let words = words(command);
    let args: Vec<&String> = words.iter().skip_while(|w| *w != "rm").skip(1).collect();
    let recursive = args.iter().any(|a| {
        *a == "--recursive" || (a.starts_with('-') && !a.starts_with("--") && a.chars().any(|c| c == 'r' || c == 'R'))
    });
    if !recursive {
        return false;
    }
    let cwd = normalize(&f.cwd);
    args.iter().filter(|a| !a.starts_with('-')).any(|path| {
        if path.contains('$') || path.contains('`') {
            return true;
        }
        let expanded = match (path.strip_prefix('~'), &f.home) {
            (Some(rest), Some(home)) => home.join(rest.trim_start_matches('/')),
            (Some(_), None) => return true,
            (None, _) => PathBuf::from(path),
        };
        let full = normalize(&f.cwd.join(expanded));
        !full.starts_with(&cwd) || full == Path::new("/")
    })
}

/// The path with `.` and `..` resolved as text (the file need not exist).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(branch: &str) -> Facts {
        Facts {
            cwd: "/home/me/src/app".into(),
            home: Some("/home/me".into()),
            branch: Some(branch.into()),
            default_branch: Some("main".into()),
        }
    }

    fn denied(command: &str, branch: &str) -> Option<String> {
        Rules::builtin().check(command, &facts(branch)).map(|d| d.kind)
    }

    #[test]
    fn what_is_refused_and_what_is_not() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("git push --force origin main", "feature", Some("force_push")),
            ("git push -f", "main", Some("force_push")),
            ("git push --force-with-lease origin HEAD", "main", Some("force_push")),
            ("git push origin +main", "feature", Some("force_push")),
            ("cd repo && git push -f origin feature:main", "feature", Some("force_push")),
            ("git push --force origin feature", "main", None),
            ("git push -f", "feature", None),
            ("git push origin main", "main", None),
            ("git reset --hard HEAD~3", "main", Some("reset_hard")),
            ("git reset --hard origin/feature", "feature", None),
            ("git clean -fdx", "main", Some("clean_force")),
            ("git clean -xdf", "main", Some("clean_force")),
            ("git clean -n", "main", None),
            ("git branch -D main", "feature", Some("delete_default_branch")),
            ("git branch -D old-idea", "main", None),
            ("rm -rf /", "feature", Some("rm_outside")),
            ("rm -rf ../other-project", "feature", Some("rm_outside")),
            ("rm -rf ~/.config", "feature", Some("rm_outside")),
            ("rm -rf $HOME/x", "feature", Some("rm_outside")),
            ("rm -rf target build/out", "feature", None),
            ("rm -rf ./node_modules", "feature", None),
            ("rm -f /tmp/x", "feature", None),
            ("gh pr merge 12 --squash", "feature", Some("gh_pr_merge")),
            ("gh release create v1.0", "feature", Some("gh_release")),
            ("gh pr create", "feature", None),
            ("echo 'git push --force origin main'", "main", None),
        ];
        for (command, branch, want) in cases {
            assert_eq!(denied(command, branch).as_deref(), *want, "{command} on {branch}");
        }
    }

    #[test]
    fn the_agent_is_told_why_and_what_to_do() {
        let d = Rules::builtin().check("git push -f", &facts("main")).unwrap();
        assert!(
            d.reason.contains("a force push to the default branch") && d.reason.contains("carry on"),
            "{}",
            d.reason
        );
    }

    #[test]
    fn a_user_file_adds_rules_and_switches_built_in_ones_off() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("guard.toml"),
            "disable = [\"gh_pr_merge\"]\n[[rule]]\nkind = \"deploy\"\nwhat = \"a deploy\"\npattern = '^make deploy'\nwhen = \"always\"\n",
        )
        .unwrap();
        let rules = Rules::load(Some(dir.path())).unwrap();
        assert_eq!(rules.check("make deploy", &facts("x")).unwrap().kind, "deploy");
        assert_eq!(rules.check("gh pr merge 3", &facts("x")), None);
        std::fs::write(
            dir.path().join("guard.toml"),
            "[[rule]]\nkind = \"k\"\nwhat = \"w\"\npattern = '('\nwhen = \"always\"\n",
        )
        .unwrap();
        let err = Rules::load(Some(dir.path())).unwrap_err().to_string();
        assert!(err.contains("guard.toml") && err.contains("rule[7].pattern"), "{err}");
        std::fs::write(
            dir.path().join("guard.toml"),
            "[[rule]]\nkind = \"k\"\nwhat = \"w\"\npattern = 'x'\nwhen = \"sometimes\"\n",
        )
        .unwrap();
        assert!(Rules::load(Some(dir.path())).unwrap_err().to_string().contains("sometimes"));
    }
}
