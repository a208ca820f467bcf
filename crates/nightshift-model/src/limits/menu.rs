//! Claude Code's usage-limit menu (`What do you want to do?` / `1. Stop and wait for limit to reset`
//! / `2. Wait here, then continue automatically at …` / `3. Upgrade your plan`), shown instead of
//! the automatic continue when the reset is more than a day away (a weekly limit) or automatic
//! continue is off.
//!
//! Only the rows read from the screen decide which key answers it: if the layout is not the one
//! known, nothing is pressed. "Upgrade your plan" is never chosen.

use std::sync::LazyLock;

use regex::Regex;

/// The menu as read from the screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitMenu {
    /// The limit notice above it, when one is on screen.
    pub notice: Option<String>,
    /// The key of "Stop and wait for limit to reset" (or plain "Stop").
    pub stop: Option<char>,
    /// The key of "Wait here, then continue automatically …".
    pub wait: Option<char>,
}

static OPTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(?:❯\s*)?([1-9])\.\s+(.+?)\s*$").expect("the option pattern is valid"));

/// The limit menu on the screen `rows`, if the screen shows one.
pub fn read(rows: &[String]) -> Option<LimitMenu> {
    let question = rows.iter().rposition(|r| r.trim() == "What do you want to do?")?;
    let mut menu = LimitMenu { notice: None, stop: None, wait: None };
    for row in &rows[question + 1..] {
        let Some(c) = OPTION.captures(row) else { continue };
        let key = c[1].chars().next()?;
        let label = &c[2];
        if label == "Stop and wait for limit to reset" || label == "Stop" {
            menu.stop = Some(key);
        } else if label.starts_with("Wait here, then continue automatically") {
            menu.wait = Some(key);
        }
    }
    if menu.stop.is_none() && menu.wait.is_none() {
        return None;
    }
    menu.notice = rows[..question]
        .iter()
        .rev()
        .map(|r| r.trim().trim_start_matches('⎿').trim())
        .find(|r| r.contains("limit") && r.contains("resets"))
        .map(str::to_string);
    Some(menu)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(name: &str) -> Vec<String> {
        let path = format!("{}/../../tests/fixtures/claude-code/2.1.332/nightshift/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(path).unwrap().lines().map(String::from).collect()
    }

    #[test]
    fn the_weekly_menu_of_the_real_client_is_read() {
        let menu = read(&capture("weekly-menu.screen.txt")).expect("the menu");
        assert_eq!(menu.stop, Some('1'));
        assert_eq!(menu.wait, Some('2'));
        assert_eq!(menu.notice.as_deref(), Some("You've hit your weekly limit · resets Dec 1, 8:26pm (UTC)"));
    }

    #[test]
    fn other_menus_and_screens_are_not_the_limit_menu() {
        for name in ["question-mock.txt", "permission.txt", "weekly-limit.txt"] {
            assert_eq!(read(&capture(name)), None, "{name}");
        }
        let rows: Vec<String> =
            ["What do you want to do?", "❯ 1. Upgrade your plan", "  2. Ask your admin"].map(String::from).to_vec();
        assert_eq!(read(&rows), None, "no safe choice: nothing to press");
    }

    #[test]
    fn the_keys_come_from_the_rows_not_their_places() {
        let rows: Vec<String> = [
            "What do you want to do?",
            "  1. Upgrade your plan",
            "❯ 2. Stop",
            "  3. Wait here, then continue automatically shortly",
        ]
        .map(String::from)
        .to_vec();
        let menu = read(&rows).unwrap();
        assert_eq!((menu.stop, menu.wait, menu.notice), (Some('2'), Some('3'), None));
    }
}
