//! Every screen captured from the real clients, judged by its adapter, at the size it was captured
//! (120x40), squeezed into 80x24 and spread over 200x50. The expected verdicts were read off the
//! captures by a person; the captures are the truth, not our idea of the clients.
//!
//! Not screens, so not here: `claude-code/2.1.332/headless/*` (the output of `claude -p`).

use std::path::{Path, PathBuf};

use nightshift::agent::{Adapter, Verdict};
use nightshift::pty::PtySize;
use nightshift::screen::Screen;
use nightshift::AgentKind;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// A working signal on screen.
    Working,
    /// The prompt drawn, no working signal, no dialog.
    AtPrompt,
    /// A dialog of this kind waits for the user.
    Dialog(&'static str),
    /// Neither a working signal nor a dialog, and no prompt either (a panel the user opened).
    Quiet,
    /// At the prompt, right after the user interrupted the turn (the client sends no `Stop` then),
    /// wherever the screen still shows it.
    Interrupted,
}
use Expect::*;

const CLAUDE: &[(&str, Expect)] = &[
    ("clear/01-after-turn", AtPrompt),
    ("clear/02-after-clear", AtPrompt),
    ("clear/03-init-t1s", AtPrompt),
    ("clear/03-init-t4s", AtPrompt),
    ("clear/04-after-init", AtPrompt),
    ("clear/05-after-kickstart", AtPrompt),
    ("fast/01-idle", AtPrompt),
    ("fast/02-after-send-t0.3s", AtPrompt),
    ("fast/02-after-send-t1s", AtPrompt),
    ("fast/03-finished", AtPrompt),
    ("idle/01-idle", AtPrompt),
    ("idle/02-idle-after-20s", AtPrompt),
    // The usage-limit screens: no turn runs (the limit itself is read by the limits module).
    ("limit/01-idle", AtPrompt),
    ("limit/02-limit-t0.5s", AtPrompt),
    ("limit/02-limit-t1.5s", AtPrompt),
    ("limit/02-limit-t3s", AtPrompt),
    ("limit/02-limit-t6s", AtPrompt),
    ("limit/02-limit-t12s", AtPrompt),
    ("limit/03-limit-again", AtPrompt),
    ("limit/04-after-reset-ok", AtPrompt),
    ("nightshift/permission", Dialog("permission")),
    ("nightshift/after-permission-denied", Interrupted),
    ("nightshift/auto-mode-check", Dialog("confirmation")),
    ("nightshift/overload-retrying", Working),
    // Idle though not empty: the dim "Resend your message to try again" placeholder.
    ("nightshift/overload-gave-up", AtPrompt),
    ("nightshift/typed-one-char", AtPrompt),
    ("nightshift/question-mock", Dialog("question")),
    // AskUserQuestion with two questions: each in turn, then a review of the answers to submit.
    ("nightshift/question-multi-first", Dialog("question")),
    ("nightshift/question-multi-first-down", Dialog("question")),
    ("nightshift/question-multi-second", Dialog("question")),
    ("nightshift/question-multi-review", Dialog("question")),
    // `--no-hooks`: Bash prompts for two commands, and a WebFetch prompt.
    ("nightshift/permission-touch", Dialog("permission")),
    ("nightshift/permission-rm", Dialog("permission")),
    ("nightshift/permission-fetch", Dialog("permission")),
    ("nightshift/weekly-limit", AtPrompt),
    ("nightshift/weekly-menu.screen", Dialog("menu")),
    ("nightshift/limit-menu-5h-autocontinue-off", Dialog("menu")),
    ("nightshift/weekly-menu-stop", AtPrompt),
    ("nightshift/weekly-menu-second-hit", AtPrompt),
    ("nightshift/weekly-menu-stop-after-reset", AtPrompt),
    ("nightshift/weekly-menu-wait", AtPrompt),
    ("nightshift/weekly-menu-wait-due", AtPrompt),
    ("nightshift/weekly-menu-wait-fired", AtPrompt),
    ("nightshift/tool-silent-t5s", Working),
    // A folder not trusted yet: the first-start question, drawn from the top of the screen.
    ("nightshift/trust-first-start", Dialog("trust")),
    ("question/01-question", Dialog("question")),
    ("question/02-question-later", Dialog("question")),
    ("statusline/01-idle-with-statusline", AtPrompt),
    ("statusline/02-after-turn", AtPrompt),
    ("statusline/03-working", Working),
    ("statusline/04-after-slow", AtPrompt),
    // The tool scenario's frames between the tool call and the answer show no working line.
    ("tool/02-tool-t1s", AtPrompt),
    ("tool/02-tool-t3s", AtPrompt),
    ("tool/02-tool-t6s", AtPrompt),
    ("tool/02-tool-t10s", AtPrompt),
    ("tool/03-finished", AtPrompt),
    ("working/01-idle", AtPrompt),
    ("working/02-working-t0.5s", Working),
    ("working/02-working-t1s", Working),
    ("working/02-working-t2s", Working),
    ("working/02-working-t3s", Working),
    ("working/02-working-t5s", Working),
    ("working/02-working-t8s", Working),
    ("working/02-working-t12s", Working),
    ("working/02-working-t16s", Working),
    ("working/02-working-t19s", Working),
    ("working/03-finished", AtPrompt),
    ("working/04-idle-after", AtPrompt),
];

const CODEX: &[(&str, Expect)] = &[
    ("fast/01-idle", AtPrompt),
    ("fast/02-typed", AtPrompt),
    ("fast/03-after-0.5s", AtPrompt),
    ("fast/03-after-2s", AtPrompt),
    ("fast/04-finished", AtPrompt),
    ("idle/01-idle", AtPrompt),
    ("idle/02-idle-20s", AtPrompt),
    ("idle/03-typed-no-enter", AtPrompt),
    ("idle/04-typed-5s-later", AtPrompt),
    ("idle/05-cleared", AtPrompt),
    ("idle/06-question-mark-shortcuts", AtPrompt),
    // The user opened the warnings panel (f2): it covers the composer; nothing runs.
    ("idle/07-f2-warnings", Quiet),
    ("idle/08-after-escape", AtPrompt),
    ("limit/01-idle", AtPrompt),
    ("limit/02-typed", AtPrompt),
    ("limit/03-after-0.5s", Dialog("menu")),
    ("limit/03-after-1s", Dialog("menu")),
    ("limit/03-after-3s", Dialog("menu")),
    ("limit/03-after-8s", Dialog("menu")),
    ("limit/03-after-20s", Dialog("menu")),
    ("limit/04-final", Dialog("menu")),
    ("slow/01-idle", AtPrompt),
    ("slow/02-typed", AtPrompt),
    // While answer text streams Codex draws no status line: the title's spinner carries the turn.
    ("slow/03-working-0.5s", Working),
    ("slow/03-working-1s", Working),
    ("slow/03-working-3s", Working),
    ("slow/03-working-8s", Working),
    ("slow/03-working-15s", Working),
    ("slow/04-finished", AtPrompt),
    ("slow/05-finished-10s", AtPrompt),
    ("think/01-idle", AtPrompt),
    ("think/02-typed", AtPrompt),
    ("think/03-working-0.5s", Working),
    ("think/03-working-1s", Working),
    ("think/03-working-3s", Working),
    ("think/03-working-5s", Working),
    ("think/03-working-8s", Working),
    ("think/03-working-15s", Working),
    ("think/03-working-20s", Working),
    ("think/03-working-25s", Working),
    ("think/04-finished", AtPrompt),
    ("think/05-finished-10s", AtPrompt),
    ("tool/01-idle", AtPrompt),
    ("tool/02-typed", AtPrompt),
    ("tool/03-after-0.5s", Working),
    ("tool/03-after-1s", AtPrompt),
    ("tool/03-after-2s", AtPrompt),
    ("tool/03-after-4s", AtPrompt),
    ("tool/03-after-8s", AtPrompt),
    ("tool/04-final", AtPrompt),
];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The terminal title at a capture: `NAME.title.txt`, `pane-title.txt` beside it, or `titles.tsv`.
fn title_of(dir: &Path, label: &str) -> String {
    let own = dir.join(format!("{label}.title.txt"));
    if let Ok(t) = std::fs::read_to_string(&own) {
        return t.trim_end_matches('\n').to_string();
    }
    if let Ok(t) = std::fs::read_to_string(dir.join("pane-title.txt")) {
        return t.trim_end_matches('\n').to_string();
    }
    if let Ok(tsv) = std::fs::read_to_string(dir.join("titles.tsv")) {
        for line in tsv.lines() {
            let mut cols = line.split('\t');
            if cols.next() == Some(label) {
                return cols.nth(1).unwrap_or("").to_string();
            }
        }
    }
    String::new()
}

fn is_rule(row: &str) -> bool {
    row.chars().count() >= 16 && row.chars().all(|c| c == '─')
}

/// Draws the captured rows into a terminal of `size`, anchored at the bottom (where both clients
/// keep their composer and footer); rules span the new width, rows wider than it are cut.
fn render(rows: &[&str], title: &str, size: PtySize) -> Screen {
    let mut screen = Screen::new(size);
    let mut bytes = format!("\x1b]0;{title}\x07\x1b[2J").into_bytes();
    let last = rows.iter().rposition(|r| !r.trim().is_empty()).map_or(0, |i| i + 1);
    let rows = &rows[..last];
    let keep = rows.len().min(size.rows as usize);
    let top = size.rows as usize - keep;
    for (i, row) in rows[rows.len() - keep..].iter().enumerate() {
        let text: String = if is_rule(row) {
            "─".repeat(size.cols as usize)
        } else {
            row.chars().take(size.cols as usize).collect()
        };
        bytes.extend(format!("\x1b[{};1H{text}", top + i + 1).into_bytes());
    }
    screen.feed(&bytes);
    screen
}

fn check(agent: AgentKind, root: &str, table: &[(&str, Expect)]) {
    let adapter = Adapter::builtin(agent);
    let mut failures = Vec::new();
    for (name, expect) in table {
        let (folder, label) = name.split_once('/').unwrap();
        let dir = fixtures().join(root).join(folder);
        let text = std::fs::read_to_string(dir.join(format!("{label}.txt"))).unwrap_or_else(|e| panic!("{name}: {e}"));
        let rows: Vec<&str> = text.lines().collect();
        let title = title_of(&dir, label);
        for size in [PtySize::new(120, 40), PtySize::new(80, 24), PtySize::new(200, 50)] {
            let snapshot = render(&rows, &title, size).snapshot();
            let verdict = adapter.classify(&snapshot);
            let ok = match expect {
                Working => verdict.working.is_some() && verdict.dialog.is_none(),
                AtPrompt => verdict == Verdict { working: None, dialog: None, prompt: true, interrupted: false },
                Dialog(kind) => {
                    verdict.dialog.as_ref().is_some_and(|d| d.kind.as_str() == *kind) && verdict.working.is_none()
                }
                Quiet => verdict == Verdict { working: None, dialog: None, prompt: false, interrupted: false },
                // Squeezed into fewer rows, the interrupted line can fall off the top: then it is not seen.
                Interrupted => {
                    let shown = snapshot.rows.iter().any(|r| r.contains("Interrupted"));
                    verdict == Verdict { working: None, dialog: None, prompt: true, interrupted: shown }
                }
            };
            if !ok {
                failures.push(format!(
                    "{root}/{name} at {}x{}: expected {expect:?}, got {verdict:?}",
                    size.cols, size.rows
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} wrong verdicts:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn claude_code_captures() {
    check(AgentKind::Claude, "claude-code/2.1.332", CLAUDE);
}

#[test]
fn codex_captures() {
    check(AgentKind::Codex, "codex/0.171.0", CODEX);
}

#[test]
fn every_capture_is_in_a_table() {
    for (root, table) in [("claude-code/2.1.332", CLAUDE), ("codex/0.171.0", CODEX)] {
        let dir = fixtures().join(root);
        for folder in std::fs::read_dir(&dir).unwrap().flatten().filter(|e| e.path().is_dir()) {
            let folder_name = folder.file_name().to_string_lossy().to_string();
            if folder_name == "headless" {
                continue;
            }
            for file in std::fs::read_dir(folder.path()).unwrap().flatten() {
                let name = file.file_name().to_string_lossy().to_string();
                let Some(label) = name.strip_suffix(".txt") else { continue };
                if label.ends_with(".ansi")
                    || label.ends_with(".title")
                    || !label.starts_with(|c: char| c.is_ascii_digit()) && folder_name != "nightshift"
                {
                    continue;
                }
                let key = format!("{folder_name}/{label}");
                assert!(table.iter().any(|(n, _)| *n == key), "{root}/{key} has no expected verdict");
            }
        }
    }
}

#[test]
fn a_question_dialog_carries_its_question() {
    let dir = fixtures().join("claude-code/2.1.332/question");
    let text = std::fs::read_to_string(dir.join("01-question.txt")).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    let verdict =
        Adapter::builtin(AgentKind::Claude).classify(&render(&rows, "✳ Claude Code", PtySize::new(120, 40)).snapshot());
    assert_eq!(verdict.dialog.unwrap().text.as_deref(), Some("Which database should the new service use?"));
}

#[test]
fn limit_notices_are_read_only_from_the_clients_own_region() {
    let now = chrono::DateTime::parse_from_rfc3339("2026-11-30T10:00:00Z").unwrap().with_timezone(&chrono::Utc);
    for (agent, root, table) in
        [(AgentKind::Claude, "claude-code/2.1.332", CLAUDE), (AgentKind::Codex, "codex/0.171.0", CODEX)]
    {
        let adapter = Adapter::builtin(agent);
        for (name, _) in table {
            let (folder, label) = name.split_once('/').unwrap();
            let dir = fixtures().join(root).join(folder);
            let text = std::fs::read_to_string(dir.join(format!("{label}.txt"))).unwrap();
            let rows: Vec<&str> = text.lines().collect();
            let region = adapter.limit_region(&render(&rows, &title_of(&dir, label), PtySize::new(120, 40)).snapshot());
            let found = nightshift::limits::find_limit(&region, now, &chrono::Utc);
            // The client shows its limit notice on these screens, and only these.
            let limited = matches!(
                (agent, *name),
                (
                    AgentKind::Claude,
                    "limit/02-limit-t0.5s"
                        | "limit/02-limit-t1.5s"
                        | "limit/02-limit-t3s"
                        | "limit/02-limit-t6s"
                        | "limit/02-limit-t12s"
                        | "limit/03-limit-again"
                        | "nightshift/weekly-limit"
                        | "nightshift/weekly-menu-wait"
                        | "nightshift/weekly-menu-wait-due"
                ) | (
                    AgentKind::Codex,
                    "limit/03-after-0.5s"
                        | "limit/03-after-1s"
                        | "limit/03-after-3s"
                        | "limit/03-after-8s"
                        | "limit/03-after-20s"
                        | "limit/04-final"
                )
            );
            assert_eq!(found.is_some(), limited, "{root}/{name}: region {region:?} gave {found:?}");
            if let Some(found) = found.filter(|_| agent == AgentKind::Claude && folder == "limit") {
                assert_eq!(found.resets_at.map(|t| t.format("%H:%M").to_string()).as_deref(), Some("14:33"), "{name}");
            }
        }
    }
    // The transcript quoting a limit is not the client's notice.
    let quoted = [
        "● Here is what it printed:",
        "  You've hit your limit · resets 3pm",
        "",
        &"─".repeat(120),
        "❯\u{a0}",
        &"─".repeat(120),
        "  ⏵⏵ auto mode on (shift+tab to cycle)",
    ];
    let region = Adapter::builtin(AgentKind::Claude)
        .limit_region(&render(&quoted, "✳ Claude Code", PtySize::new(120, 40)).snapshot());
    assert_eq!(nightshift::limits::find_limit(&region, now, &chrono::Utc), None, "{region:?}");
}
