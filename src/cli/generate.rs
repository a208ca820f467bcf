//! `nightshift generate`: the shell completions and the man pages, made from the same clap
//! definitions as the parser, so they cannot drift from it. Hidden: `make install` and the Debian
//! package run it, a user has no need to.
//!
//! The exit statuses are written once, here, and shown both in `--help` and in the man pages.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Command, CommandFactory as _};
use clap_complete::Shell;
use clap_mangen::roff::{bold, italic, roman, Roff};
use clap_mangen::Man;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// Print the completion script for SHELL on stdout
    Completion { shell: Shell },
    /// Write the man pages (nightshift.1 and one per verb) into DIR
    Man { dir: PathBuf },
}

/// What every verb but `run` exits with.
pub const EXIT: &[(&str, &str)] = &[
    ("0", "Success."),
    ("1", "Nightshift failed; the error is printed on standard error."),
    ("2", "The command line is wrong (an unknown verb or option, a missing or invalid value)."),
];

/// What `nightshift run` exits with: the supervised command's status, as a shell reports it.
pub const RUN_EXIT: &[(&str, &str)] = &[
    ("N", "The command exited with status N."),
    ("128+N", "The command was killed by signal N (137 for SIGKILL, 129 for the SIGHUP of nightshift stop)."),
    ("127", "The command does not exist."),
    ("126", "The command is not executable."),
    ("1", "Nightshift itself failed; the error is printed on standard error."),
    ("2", "The command line is wrong."),
];

/// The environment Nightshift reads, for the man page.
const ENVIRONMENT: &[(&str, &str)] = &[
    ("NIGHTSHIFT_STATE_DIR", "The state directory (the journal, the logs); the same as --state-dir."),
    ("NIGHTSHIFT_RUNTIME_DIR", "The directory of the control sockets."),
    ("NIGHTSHIFT_CONFIG_DIR", "The configuration directory (config.toml, agents/)."),
    ("NIGHTSHIFT_LOG", "The log level, in tracing's filter syntax: debug, nightshift=trace, ..."),
    ("NO_COLOR", "When set and not empty, nothing is coloured. Otherwise colour goes only to a terminal (and to Claude Code's status bar)."),
    ("XDG_STATE_HOME, XDG_CONFIG_HOME, XDG_RUNTIME_DIR", "Where the directories above are by default."),
];

const FILES: &[(&str, &str)] = &[
    ("$XDG_STATE_HOME/nightshift/journal.sqlite3", "The journal of every session and event (SQLite)."),
    ("$XDG_STATE_HOME/nightshift/logs/", "Daily logs, a week kept."),
    ("$XDG_CONFIG_HOME/nightshift/config.toml", "Settings and your own respawn presets."),
    ("$XDG_CONFIG_HOME/nightshift/agents/claude.toml, codex.toml", "Overrides of how an agent's screen is read."),
    ("$XDG_RUNTIME_DIR/nightshift/", "The control sockets (or /tmp/nightshift-$UID/)."),
];

/// The exit statuses as `--help` shows them (after the options).
pub fn exit_help(codes: &[(&str, &str)]) -> String {
    let width = codes.iter().map(|(code, _)| code.len()).max().unwrap_or(0);
    let mut text = String::from("Exit status:");
    for (code, meaning) in codes {
        text.push_str(&format!("\n  {code:<width$}  {meaning}"));
    }
    text
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.what {
        What::Completion { shell } => {
            let mut cmd = without_hidden(&super::Cli::command());
            let mut out = std::io::stdout().lock();
            clap_complete::generate(shell, &mut cmd, "nightshift", &mut out);
            out.flush()?;
        }
        What::Man { dir } => {
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            let mut cmd = super::Cli::command().disable_help_subcommand(true);
            cmd.build();
            for page in pages(&cmd).into_iter().chain([app_page()]) {
                let path = dir.join(format!("{}.1", page.name));
                std::fs::write(&path, page.text).with_context(|| format!("cannot write {}", path.display()))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The command tree less its hidden verbs, which clap_complete would offer (it skips hidden options
/// and values, not verbs): the exporter Claude Code runs and this verb are not for typing.
fn without_hidden(cmd: &Command) -> Command {
    let mut fresh = Command::new(cmd.get_name().to_string())
        .args(cmd.get_arguments().cloned())
        .subcommands(cmd.get_subcommands().filter(|s| !s.is_hide_set()).map(without_hidden));
    if let Some(about) = cmd.get_about() {
        fresh = fresh.about(about.clone());
    }
    if let Some(version) = cmd.get_version() {
        fresh = fresh.version(version.to_string());
    }
    fresh
}

struct Page {
    name: String,
    text: Vec<u8>,
}

/// One page for the command and one for each of its visible verbs, recursively.
fn pages(root: &Command) -> Vec<Page> {
    let mut all = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(cmd) = stack.pop() {
        stack.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
        let name = cmd.get_display_name().unwrap_or_else(|| cmd.get_name()).to_string();
        let is_root = name == root.get_name();
        let text = page(&cmd, &name, is_root, root).expect("rendering into memory does not fail");
        all.push(Page { name, text });
    }
    all
}

fn page(cmd: &Command, name: &str, is_root: bool, root: &Command) -> std::io::Result<Vec<u8>> {
    let man = Man::new(cmd.clone().version(root.get_version().unwrap_or(env!("CARGO_PKG_VERSION")).to_string()))
        .manual("Nightshift Manual")
        .source(format!("Nightshift {}", env!("CARGO_PKG_VERSION")));
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut out)?;
    }
    let mut roff = Roff::new();
    let codes = if name == "nightshift-run" { RUN_EXIT } else { EXIT };
    list(&mut roff, "EXIT STATUS", codes);
    if is_root {
        list(&mut roff, "ENVIRONMENT", ENVIRONMENT);
        list(&mut roff, "FILES", FILES);
    }
    roff.control("SH", ["SEE ALSO"]);
    let mut see: Vec<String> = if is_root {
        root.get_subcommands().filter(|s| !s.is_hide_set()).map(|s| format!("nightshift-{}", s.get_name())).collect()
    } else {
        vec!["nightshift".to_string()]
    };
    see.push("nightshift-app".to_string());
    let refs: Vec<_> = see
        .iter()
        .enumerate()
        .flat_map(|(i, page)| {
            let sep = if i + 1 < see.len() { "(1), " } else { "(1)" };
            [bold(page.as_str()), roman(sep)]
        })
        .collect();
    roff.text(refs);
    roff.to_writer(&mut out)?;
    man.render_version_section(&mut out)?;
    Ok(out)
}

/// A section of tagged paragraphs: each term in bold, its meaning under it.
fn list(roff: &mut Roff, heading: &str, items: &[(&str, &str)]) {
    roff.control("SH", [heading]);
    for (term, meaning) in items {
        roff.control("TP", []);
        roff.text([if heading == "FILES" { italic(*term) } else { bold(*term) }]);
        roff.text([roman(*meaning)]);
    }
}

/// The tray app's page: it takes no arguments, so it is written here rather than from clap.
fn app_page() -> Page {
    let mut roff = Roff::new();
    roff.control(
        "TH",
        ["NIGHTSHIFT-APP", "1", "", &format!("Nightshift {}", env!("CARGO_PKG_VERSION")), "Nightshift Manual"],
    );
    roff.control("SH", ["NAME"]);
    roff.text([roman("nightshift-app - Nightshift's tray app")]);
    roff.control("SH", ["SYNOPSIS"]);
    roff.text([bold("nightshift-app")]);
    roff.control("SH", ["DESCRIPTION"]);
    roff.text([roman(
        "The tray app runs Nightshift's supervisor in-process, once per user: a second launch shows the first \
         one's window. Its tray icon shows the worst state across the live sessions; its window lists every \
         session in the journal, including those run by nightshift run in a terminal, with their screens, \
         journals and options, the usage chip, the away digest and the morning summary. Closing the window \
         keeps the app and its sessions running; Quit in the tray menu stops them. Launch at login is a \
         setting in the window (an XDG autostart entry that starts this binary).",
    )]);
    list(
        &mut roff,
        "EXIT STATUS",
        &[
            ("0", "The app was quit, or it handed over to the one already running."),
            ("1", "The app could not start; the error is printed on standard error."),
        ],
    );
    list(&mut roff, "ENVIRONMENT", ENVIRONMENT);
    roff.control("SH", ["SEE ALSO"]);
    roff.text([bold("nightshift"), roman("(1)")]);
    Page { name: "nightshift-app".to_string(), text: roff.to_roff().into_bytes() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every verb path with its options, visible ones only.
    fn shape(cmd: &Command, path: &str, out: &mut Vec<String>) {
        let mut longs: Vec<_> =
            cmd.get_arguments().filter(|a| !a.is_hide_set()).map(|a| a.get_id().to_string()).collect();
        longs.sort();
        out.push(format!("{path}: {}", longs.join(" ")));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            shape(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn completions_offer_every_visible_verb_and_option_and_no_hidden_verb() {
        let mut trimmed = without_hidden(&super::super::Cli::command());
        trimmed.build();
        let mut full = super::super::Cli::command();
        full.build();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        shape(&full, "nightshift", &mut a);
        shape(&trimmed, "nightshift", &mut b);
        assert_eq!(a, b);
        assert!(a.iter().any(|l| l.starts_with("nightshift presets save:")), "{a:?}");
        let names: Vec<_> = trimmed.get_subcommands().map(|s| s.get_name().to_string()).collect();
        assert!(!names.iter().any(|n| n == "statusline" || n == "generate"), "{names:?}");
        let mut script = Vec::new();
        clap_complete::generate(Shell::Bash, &mut trimmed, "nightshift", &mut script);
        let script = String::from_utf8(script).unwrap();
        assert!(script.contains("--quiet-window") && !script.contains("statusline"));
    }

    #[test]
    fn every_visible_verb_has_a_page_and_run_documents_the_commands_status() {
        let mut cmd = super::super::Cli::command().disable_help_subcommand(true);
        cmd.build();
        let pages = pages(&cmd);
        let names: Vec<_> = pages.iter().map(|p| p.name.as_str()).collect();
        for verb in
            ["nightshift", "nightshift-run", "nightshift-usage", "nightshift-presets-save", "nightshift-breaker-reset"]
        {
            assert!(names.contains(&verb), "{verb} missing from {names:?}");
        }
        assert!(!names.iter().any(|n| n.contains("statusline") || n.contains("generate")), "{names:?}");
        let run = String::from_utf8(pages.iter().find(|p| p.name == "nightshift-run").unwrap().text.clone()).unwrap();
        assert!(run.contains(".SH \"EXIT STATUS\"") && run.contains("128+N") && run.contains("127"), "{run}");
        let root = String::from_utf8(pages.iter().find(|p| p.name == "nightshift").unwrap().text.clone()).unwrap();
        for part in ["NIGHTSHIFT_STATE_DIR", "NO_COLOR", "journal.sqlite3", "nightshift\\-run(1)", "EXIT STATUS"] {
            assert!(root.contains(part), "{part} missing from the root page");
        }
    }

    #[test]
    fn help_shows_the_same_exit_statuses() {
        let help = super::super::Cli::command().render_long_help().to_string();
        assert!(help.contains("Exit status:") && help.contains("The command line is wrong"), "{help}");
        let mut cmd = super::super::Cli::command();
        let run = cmd.find_subcommand_mut("run").unwrap().render_long_help().to_string();
        assert!(run.contains("128+N") && run.contains("The command does not exist."), "{run}");
    }
}
