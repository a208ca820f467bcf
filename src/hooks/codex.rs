//! Codex's `notify`: the program the Codex CLI runs at the end of each turn, Codex's side of the
//! same channel Claude Code's hooks use (see `tests/fixtures/codex/0.171.0/NOTIFY.md` for what the
//! real client does).
//!
//! A Codex session Nightshift starts gets `-c notify=["<nightshift>", "notify", …]` on its command
//! line (never in a file). Codex runs it detached after each completed turn with one JSON argument
//! (`agent-turn-complete`: the thread, the turn, the last assistant message); `nightshift notify`
//! forwards it over the session's control socket with the session's token and fails open, like
//! `nightshift hook`. A `notify` the user set themselves (in `-c`, a profile or config.toml) is not
//! lost: ours runs theirs after it, with the same argument.
//!
//! Codex also notifies for the side thread that names a new thread; only the conversation's thread
//! has a rollout file in `$CODEX_HOME/sessions/`, which is how the two are told apart
//! ([`rollout`]), and that thread's id is what `codex resume <id>` takes.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub use nightshift_model::agent::codex::{is_thread_id, TURN_COMPLETE};

/// The Nightshift verb Codex runs as its notify program.
pub const VERB: &str = "notify";

/// One notification, as Nightshift reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// `agent-turn-complete` (the only kind 0.171.0 sends).
    pub kind: String,
    /// The thread (`codex resume <id>`).
    pub thread: Option<String>,
    pub turn: Option<String>,
    pub last_message: Option<String>,
    /// What the turn was given: the prompts typed or passed to it.
    pub input: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("not a Codex notification: {0}")]
pub struct NotANotification(String);

fn text(v: &Value, key: &str) -> Option<String> {
    v[key].as_str().filter(|s| !s.is_empty()).map(|s| s.chars().take(64 * 1024).collect())
}

impl Notification {
    /// Reads the JSON argument Codex gives its notify program.
    pub fn from_payload(v: &Value) -> Result<Self, NotANotification> {
        let kind = v["type"].as_str().ok_or_else(|| NotANotification("no type".into()))?;
        Ok(Self {
            kind: kind.chars().take(64).collect(),
            thread: text(v, "thread-id").filter(|id| is_thread_id(id)),
            turn: text(v, "turn-id"),
            last_message: text(v, "last-assistant-message"),
            input: v["input-messages"]
                .as_array()
                .map(|all| {
                    all.iter()
                        .filter_map(|m| m.as_str())
                        .take(16)
                        .map(|m| m.chars().take(64 * 1024).collect())
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    pub fn turn_complete(&self) -> bool {
        self.kind == TURN_COMPLETE
    }

    /// What the session hears of a completed turn of its conversation (whose id it records).
    pub fn into_hook(self) -> super::Hook {
        let event = super::Event::TurnComplete { last_message: self.last_message, input: self.input };
        super::Hook { conversation: self.thread, event }
    }
}

/// Codex's home: `$CODEX_HOME`, else `~/.codex`.
pub fn home(codex_home: Option<OsString>, user_home: Option<PathBuf>) -> Option<PathBuf> {
    codex_home.filter(|h| !h.is_empty()).map(PathBuf::from).or_else(|| user_home.map(|h| h.join(".codex")))
}

/// Codex's home as a child started with `env` over this process's environment sees it.
pub fn home_for(env: &[(String, String)]) -> Option<PathBuf> {
    let var = |key: &str| match env.iter().rev().find(|(k, _)| k == key) {
        Some((_, v)) => Some(OsString::from(v)),
        None => std::env::var_os(key),
    };
    home(var("CODEX_HOME"), var("HOME").map(PathBuf::from))
}

/// Directory entries of `dir`, newest name first.
fn newest_first(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path()).collect();
    entries.sort_unstable_by(|a, b| b.cmp(a));
    entries
}

/// The rollout file Codex keeps of `thread` (`sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`),
/// searched from the newest day back. Codex writes it when the thread's first turn starts; a thread
/// without one (a title thread) is not a conversation.
pub fn rollout(codex_home: &Path, thread: &str) -> Option<PathBuf> {
    if !is_thread_id(thread) {
        return None;
    }
    let suffix = format!("-{thread}.jsonl");
    for year in newest_first(&codex_home.join("sessions")) {
        for month in newest_first(&year) {
            for day in newest_first(&month) {
                let found = newest_first(&day).into_iter().find(|f| {
                    f.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(&suffix))
                });
                if found.is_some() {
                    return found;
                }
            }
        }
    }
    None
}

/// The newest rollout file of a thread started in `cwd` at or after `since`, searched in the last
/// two days' folders: the conversation of a session whose thread no notify has named yet (its
/// first turn ended in an error). Its first line (`session_meta`) says where it was started.
pub fn rollout_in(codex_home: &Path, cwd: &Path, since: std::time::SystemTime) -> Option<PathBuf> {
    let days = newest_first(&codex_home.join("sessions"))
        .into_iter()
        .flat_map(|year| newest_first(&year))
        .flat_map(|month| newest_first(&month))
        .take(2);
    let started_in = |file: &Path| {
        use std::io::BufRead as _;
        let first = std::io::BufReader::new(std::fs::File::open(file).ok()?).lines().next()?.ok()?;
        let meta: Value = serde_json::from_str(&first).ok()?;
        Some(meta["payload"]["cwd"].as_str().is_some_and(|c| Path::new(c) == cwd))
    };
    days.flat_map(|day| newest_first(&day)).find(|f| {
        f.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("rollout-") && n.ends_with(".jsonl"))
            && std::fs::metadata(f).and_then(|m| m.modified()).is_ok_and(|m| m >= since)
            && started_in(f) == Some(true)
    })
}

/// `notify = <value>` read as TOML: a program and its arguments.
fn notify_value(value: &str) -> Option<Vec<String>> {
    let table: toml::Table = toml::from_str(&format!("notify = {value}")).ok()?;
    argv(table.get("notify")?)
}

fn argv(v: &toml::Value) -> Option<Vec<String>> {
    let list: Vec<String> = v.as_array()?.iter().map(|a| a.as_str().map(String::from)).collect::<Option<_>>()?;
    (!list.is_empty()).then_some(list)
}

fn file_notify(path: &Path) -> Option<Vec<String>> {
    let table: toml::Table = toml::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    argv(table.get("notify")?)
}

/// Where in `args` a `-c notify=…` is: the index of the `-c` (or of `--config=notify=…`), how many
/// arguments it takes, and its value.
fn find_notify(args: &[String]) -> Option<(usize, usize, String)> {
    let mut i = 0;
    let mut found = None;
    while i < args.len() {
        let (value, width) = match args[i].as_str() {
            "-c" | "--config" => (args.get(i + 1).map(String::as_str), 2),
            a => (a.strip_prefix("--config=").or_else(|| a.strip_prefix("-c")), 1),
        };
        if let Some(v) = value.and_then(|v| v.trim_start().strip_prefix("notify")) {
            if let Some(v) = v.trim_start().strip_prefix('=') {
                // The last one given wins, as it does for Codex.
                found = Some((i, width, v.trim().to_string()));
            }
        }
        i += width.min(args.len() - i).max(1);
    }
    found
}

/// The profile a command line names (`-p NAME`, `--profile NAME`, `--profile=NAME`).
fn profile(args: &[String]) -> Option<String> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-p" | "--profile" => return it.next().cloned(),
            a if a.starts_with("--profile=") => return Some(a["--profile=".len()..].to_string()),
            _ => {}
        }
    }
    None
}

/// The notify program of the user's own, where Codex would take it from: a `-c notify=…` in
/// `args`, else the profile's `<name>.config.toml`, else `config.toml` in Codex's home.
pub fn theirs(args: &[String], codex_home: Option<&Path>) -> Option<Vec<String>> {
    if let Some((_, _, value)) = find_notify(args) {
        return notify_value(&value);
    }
    let home = codex_home?;
    profile(args)
        .filter(|p| !p.is_empty() && !p.contains('/'))
        .and_then(|p| file_notify(&home.join(format!("{p}.config.toml"))))
        .or_else(|| file_notify(&home.join("config.toml")))
}

/// Gives a `codex` command line Nightshift's notify: `cli notify [-- THEIRS…]` in a `-c` of its
/// own at the front, in place of one the user gave (whose program then runs through ours).
pub fn attach(args: &mut Vec<String>, cli: &Path, codex_home: Option<&Path>) {
    let cli_word = cli.display().to_string();
    let mut theirs = theirs(args, codex_home);
    // A command line that has ours already (attached before) keeps what ours runs after it.
    if let Some(ours) = theirs.as_ref().filter(|t| t.len() >= 2 && t[0] == cli_word && t[1] == VERB) {
        theirs = ours.iter().position(|a| a == "--").map(|i| ours[i + 1..].to_vec()).filter(|t| !t.is_empty());
    }
    while let Some((i, width, _)) = find_notify(args) {
        args.drain(i..(i + width).min(args.len()));
    }
    let mut ours = vec![cli_word, VERB.to_string()];
    if let Some(theirs) = theirs {
        ours.push("--".into());
        ours.extend(theirs);
    }
    let value = toml::Value::Array(ours.into_iter().map(toml::Value::String).collect());
    args.splice(0..0, ["-c".to_string(), format!("notify={value}")]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_turn_complete_is_read_as_the_real_client_sends_it() {
        // As Codex 0.171.0 gives it to its notify program (NOTIFY.md).
        let payload = json!({"type": "agent-turn-complete", "thread-id": "01a23180-6259-7a52-95e6-8e00230df027",
            "turn-id": "01a23180-7f86-7391-a0c1-90079b0f664e", "cwd": "/work/project", "client": "codex-tui",
            "input-messages": ["say hi"], "last-assistant-message": "Hello."});
        let n = Notification::from_payload(&payload).unwrap();
        assert!(n.turn_complete());
        assert_eq!(n.thread.as_deref(), Some("01a23180-6259-7a52-95e6-8e00230df027"));
        assert_eq!(n.last_message.as_deref(), Some("Hello."));
        let odd = Notification::from_payload(&json!({"type": "later-kind", "thread-id": "../../etc"})).unwrap();
        assert!(!odd.turn_complete());
        assert_eq!(odd.thread, None, "only a UUID is taken for a thread");
        assert!(Notification::from_payload(&json!(["not", "an", "object"])).is_err());
    }

    #[test]
    fn the_conversation_is_the_thread_with_a_rollout_file() {
        let home = tempfile::tempdir().unwrap();
        let thread = "01a23180-6259-7a52-95e6-8e00230df027";
        for (day, name) in [
            ("2026/11/30", "rollout-2026-11-30T23-59-00-01a2317f-0000-7000-8000-000000000000.jsonl"),
            ("2026/12/01", &format!("rollout-2026-12-01T12-07-07-{thread}.jsonl")),
        ] {
            let dir = home.path().join("sessions").join(day);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(name), "{}\n").unwrap();
        }
        let found = rollout(home.path(), thread).expect("the conversation's rollout");
        assert!(found.ends_with(format!("2026/12/01/rollout-2026-12-01T12-07-07-{thread}.jsonl")));
        assert!(rollout(home.path(), "01a2317f-0000-7000-8000-000000000000").is_some(), "an older day too");
        // The title thread of a new conversation has none.
        assert_eq!(rollout(home.path(), "01a23180-7fc2-7591-84a8-759cc7c441e8"), None);
        assert_eq!(rollout(home.path(), "*"), None);
        assert_eq!(rollout(&home.path().join("nowhere"), thread), None);
    }

    #[test]
    fn codex_home_is_its_variable_or_the_users_dot_codex() {
        assert_eq!(home(Some("/c".into()), Some("/h".into())), Some(PathBuf::from("/c")));
        assert_eq!(home(Some("".into()), Some("/h".into())), Some(PathBuf::from("/h/.codex")));
        assert_eq!(home(None, None), None);
    }

    #[test]
    fn ours_goes_first_and_runs_the_users_own_notify_after_it() {
        let home = tempfile::tempdir().unwrap();
        let cli = Path::new("/opt/night shift/nightshift");
        let mut args = strings(&["--no-daemon", "fix the bug"]);
        attach(&mut args, cli, Some(home.path()));
        assert_eq!(
            args,
            strings(&["-c", r#"notify=["/opt/night shift/nightshift", "notify"]"#, "--no-daemon", "fix the bug"])
        );
        assert_eq!(
            theirs(&args, None),
            Some(strings(&["/opt/night shift/nightshift", "notify"])),
            "Codex reads it back"
        );

        // In config.toml: read, never written.
        let config = home.path().join("config.toml");
        std::fs::write(&config, "model = \"o3\"\nnotify = [\"notify-send\", \"Codex\"]\n").unwrap();
        let mut args = strings(&["-m", "o3"]);
        attach(&mut args, cli, Some(home.path()));
        assert_eq!(args[1], r#"notify=["/opt/night shift/nightshift", "notify", "--", "notify-send", "Codex"]"#);
        assert_eq!(
            std::fs::read_to_string(&config).unwrap(),
            "model = \"o3\"\nnotify = [\"notify-send\", \"Codex\"]\n"
        );

        // A profile's wins over config.toml, and one given with -c over both; it is taken out.
        std::fs::write(home.path().join("night.config.toml"), "notify = [\"say\", \"done\"]\n").unwrap();
        let mut args = strings(&["-p", "night"]);
        attach(&mut args, cli, Some(home.path()));
        assert!(args[1].ends_with(r#""--", "say", "done"]"#), "{args:?}");
        let mut args =
            strings(&["-c", "notify=['beep']", "--config=model=\"o3\"", "--config", "notify = [\"chime\", \"x\"]"]);
        attach(&mut args, cli, Some(home.path()));
        assert_eq!(args[1], r#"notify=["/opt/night shift/nightshift", "notify", "--", "chime", "x"]"#);
        assert_eq!(&args[2..], strings(&["--config=model=\"o3\""]), "only the notify options go: {args:?}");
    }

    #[test]
    fn attaching_again_changes_nothing() {
        // Ours, read back as the user's, would run itself after itself.
        let cli = Path::new("/bin/nightshift");
        for start in
            [strings(&["resume", "01a23180-6259-7a52-95e6-8e00230df027"]), strings(&["-c", "notify=[\"beep\"]"])]
        {
            let mut args = start;
            attach(&mut args, cli, None);
            let once = args.clone();
            attach(&mut args, cli, None);
            assert_eq!(args, once);
        }
    }
}
