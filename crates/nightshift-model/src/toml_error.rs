//! TOML errors for people: each of Nightshift's TOML files (the config, the guard, adapter
//! overrides) reports a mistake in one line that says where it is. A leaf: it uses nothing of the
//! crate.

/// A TOML error in one line: where it is (line, column, the key), then what is wrong. (The error's
/// own `Display` is a multi-line drawing of the spot.)
pub fn one_line(text: &str, e: &toml::de::Error) -> String {
    let what = e.message().replace('\n', " ");
    let Some(at) = e.span().map(|s| s.start.min(text.len())) else { return what };
    let Some(before) = text.get(..at) else { return what };
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line_no = before.matches('\n').count() + 1;
    let column = before[line_start..].chars().count() + 1;
    let line = text[line_start..].lines().next().unwrap_or_default().trim();
    let header = |l: &str| l.strip_prefix('[').map(|h| h.trim_matches(['[', ']', ' ']).to_string());
    let table = before[..line_start].lines().rev().find_map(|l| header(l.trim()));
    let key = match header(line) {
        Some(own) => Some(own),
        None => {
            let key = line.split('=').next().map(str::trim).filter(|k| !k.is_empty() && line.contains('='));
            match (table, key) {
                (Some(t), Some(k)) => Some(format!("{t}.{k}")),
                (None, Some(k)) => Some(k.to_string()),
                (_, None) => None,
            }
        }
    };
    match key {
        Some(key) => format!("line {line_no}, column {column}, key `{key}`: {what}"),
        None => format!("line {line_no}, column {column}: {what}"),
    }
}
