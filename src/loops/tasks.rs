//! A loop's tasks: one prompt repeated, or a file of tasks, each iteration taking the first open one.
//!
//! A tasks file is a Markdown checklist (`- [ ] task`, done as `- [x] task`) when it has any checklist
//! item, and otherwise one task per line in the todo.txt way: a line starting with `x ` is done, one
//! starting with `#` is a comment. Checking a task off rewrites only its own line, found again by its
//! text (the user may edit the file while the loop runs), and replaces the file in one rename.

use std::path::{Path, PathBuf};

use chrono::NaiveDate;

pub use crate::contract::TaskSource as Source;

#[derive(Debug, thiserror::Error)]
pub enum TasksError {
    #[error("cannot read the tasks file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write the tasks file {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
}

/// How a file lists its tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Checklist,
    Lines,
}

/// The open tasks of a file's text, in order.
pub fn open_tasks(text: &str) -> Vec<String> {
    let form = form(text);
    text.lines().filter_map(|l| open_item(l, form)).collect()
}

/// The open tasks of `source`: the prompt, or the file's open items.
pub fn read(source: &Source) -> Result<Vec<String>, TasksError> {
    match source {
        Source::Prompt(p) => Ok(vec![p.clone()]),
        Source::File(path) => std::fs::read_to_string(path)
            .map(|t| open_tasks(&t))
            .map_err(|source| TasksError::Read { path: path.clone(), source }),
    }
}

/// Checks `task` off in the file at `path`, on `day`. Returns whether it was found (open) there.
pub fn check_off(path: &Path, task: &str, day: NaiveDate) -> Result<bool, TasksError> {
    let text = std::fs::read_to_string(path).map_err(|source| TasksError::Read { path: path.into(), source })?;
    let Some(done) = checked_off(&text, task, day) else { return Ok(false) };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let write = || -> std::io::Result<()> {
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(&mut tmp, done.as_bytes())?;
        if let Ok(meta) = std::fs::metadata(path) {
            tmp.as_file().set_permissions(meta.permissions())?;
        }
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    };
    write().map_err(|source| TasksError::Write { path: path.into(), source })?;
    Ok(true)
}

/// `text` with the first open item reading `task` checked off, if there is one.
pub fn checked_off(text: &str, task: &str, day: NaiveDate) -> Option<String> {
    let form = form(text);
    let mut done = false;
    let mut out = String::with_capacity(text.len() + 16);
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let ending = &line[body.len()..];
        if !done && open_item(body, form).as_deref() == Some(task) {
            done = true;
            match form {
                Form::Checklist => {
                    let at = body.find("[ ]").expect("an open checklist item");
                    out.push_str(&body[..at]);
                    out.push_str("[x]");
                    out.push_str(&body[at + 3..]);
                }
                Form::Lines => {
                    let indent = &body[..body.len() - body.trim_start().len()];
                    out.push_str(&format!("{indent}x {} {}", day.format("%Y-%m-%d"), body.trim_start()));
                }
            }
            out.push_str(ending);
        } else {
            out.push_str(line);
        }
    }
    done.then_some(out)
}

fn form(text: &str) -> Form {
    if text.lines().any(|l| checklist_item(l).is_some()) {
        Form::Checklist
    } else {
        Form::Lines
    }
}

/// `(done, text)` of a Markdown checklist item.
fn checklist_item(line: &str) -> Option<(bool, &str)> {
    let rest = line.trim_start().strip_prefix(['-', '*', '+'])?.strip_prefix(' ')?;
    let (done, text) = if let Some(t) = rest.strip_prefix("[ ]") {
        (false, t)
    } else if let Some(t) = rest.strip_prefix("[x]").or_else(|| rest.strip_prefix("[X]")) {
        (true, t)
    } else {
        return None;
    };
    Some((done, text.trim()))
}

fn open_item(line: &str, form: Form) -> Option<String> {
    match form {
        Form::Checklist => checklist_item(line).filter(|(done, t)| !done && !t.is_empty()).map(|(_, t)| t.to_string()),
        Form::Lines => {
            let t = line.trim();
            (!t.is_empty() && !t.starts_with('#') && !t.starts_with("x ")).then(|| t.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 12, 1).unwrap()
    }

    #[test]
    fn a_checklist_gives_its_open_items_and_checks_off_one_line() {
        let text = "# Tonight\n\n- [x] set up\n- [ ] write the parser\n  - [ ] test it\nnotes, not a task\n* [ ] document it\n";
        assert_eq!(open_tasks(text), ["write the parser", "test it", "document it"]);
        let done = checked_off(text, "test it", day()).unwrap();
        assert_eq!(done, "# Tonight\n\n- [x] set up\n- [ ] write the parser\n  - [x] test it\nnotes, not a task\n* [ ] document it\n");
        assert_eq!(checked_off(text, "gone", day()), None, "a task the user removed is not found");
    }

    #[test]
    fn plain_lines_are_tasks_done_the_todo_txt_way() {
        let text = "# one per line\nfix the build\r\nx 2026-11-30 old one\nadd tests";
        assert_eq!(open_tasks(text), ["fix the build", "add tests"]);
        let done = checked_off(text, "fix the build", day()).unwrap();
        assert_eq!(done, "# one per line\nx 2026-12-01 fix the build\r\nx 2026-11-30 old one\nadd tests");
        assert_eq!(open_tasks(&done), ["add tests"]);
    }

    #[test]
    fn the_file_is_replaced_with_its_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("TASKS.md");
        std::fs::write(&path, "- [ ] a\n- [ ] a\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert!(check_off(&path, "a", day()).unwrap());
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "- [x] a\n- [ ] a\n", "only the first");
        assert_eq!(read(&Source::File(path.clone())).unwrap(), ["a"]);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left");
        let err = read(&Source::File(dir.path().join("nope.md"))).unwrap_err().to_string();
        assert!(err.contains("nope.md"), "{err}");
    }
}
