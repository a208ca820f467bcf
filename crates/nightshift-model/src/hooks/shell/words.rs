//! A word as written, and what it expands to: braces make it several, `~` and `$HOME` known,
//! anything else only a run can tell makes it unknown.

use super::{Parser, Word};

/// The most words one word's braces expand to before it counts as unknown.
const MAX_BRACE: usize = 256;
/// A longer word with braces (or one with more of them) counts as unknown: expanding it would
/// cost more than the guard's answer may.
const MAX_BRACE_WORD: usize = 4096;
const MAX_BRACES: usize = 64;

/// A word as written, before it is expanded.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Raw {
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Piece {
    /// Unquoted text: braces and a leading `~` expand in it.
    Plain(Vec<u8>),
    /// Quoted or escaped text: taken as it is.
    Quoted(Vec<u8>),
    /// `$HOME`.
    Home,
    /// Only a run can tell.
    Unknown,
}

/// One character of a word on its way to being expanded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    Plain(u8),
    Quoted(u8),
    Home,
    Unknown,
}

impl Raw {
    pub(super) fn plain_byte(&mut self, b: u8) {
        match self.pieces.last_mut() {
            Some(Piece::Plain(text)) => text.push(b),
            _ => self.pieces.push(Piece::Plain(vec![b])),
        }
    }

    pub(super) fn quoted(&mut self, bytes: &[u8]) {
        match self.pieces.last_mut() {
            Some(Piece::Quoted(text)) => text.extend_from_slice(bytes),
            _ => self.pieces.push(Piece::Quoted(bytes.to_vec())),
        }
    }

    pub(super) fn push(&mut self, piece: Piece) {
        self.pieces.push(piece);
    }

    /// The text of a word that is all unquoted text.
    pub(super) fn plain(&self) -> Option<&[u8]> {
        match self.pieces.as_slice() {
            [Piece::Plain(text)] => Some(text),
            _ => None,
        }
    }

    pub(super) fn is_plain(&self, word: &str) -> bool {
        self.plain() == Some(word.as_bytes())
    }

    /// `NAME=value` (or `NAME+=value`): the name, and the value as a word of its own.
    pub(super) fn assignment(&self) -> Option<(String, Raw)> {
        let Some(Piece::Plain(first)) = self.pieces.first() else { return None };
        let eq = first.iter().position(|b| *b == b'=')?;
        let name = first[..eq].strip_suffix(b"+").unwrap_or(&first[..eq]);
        let valid = name.first().is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
            && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_');
        if !valid {
            return None;
        }
        let mut value = Raw::default();
        if eq + 1 < first.len() {
            value.pieces.push(Piece::Plain(first[eq + 1..].to_vec()));
        }
        value.pieces.extend(self.pieces[1..].iter().cloned());
        Some((String::from_utf8_lossy(name).into_owned(), value))
    }

    /// A here-document's delimiter: its text, and whether any of it was quoted.
    pub(super) fn delimiter(&self) -> (Vec<u8>, bool) {
        let mut text = Vec::new();
        let mut quoted = false;
        for piece in &self.pieces {
            match piece {
                Piece::Plain(t) => text.extend_from_slice(t),
                Piece::Quoted(t) => {
                    quoted = true;
                    text.extend_from_slice(t);
                }
                Piece::Home | Piece::Unknown => quoted = true,
            }
        }
        (text, quoted)
    }

    /// Only digits (or `{name}`), right before a redirection: the file descriptor it redirects.
    pub(super) fn is_fd(&self) -> bool {
        self.plain().is_some_and(|t| {
            t.iter().all(u8::is_ascii_digit) || (t.len() > 2 && t[0] == b'{' && t[t.len() - 1] == b'}')
        })
    }

    pub(super) fn ends_with_plain(&self, set: &[u8]) -> bool {
        matches!(self.pieces.last(), Some(Piece::Plain(t)) if t.last().is_some_and(|b| set.contains(b)))
    }

    pub(super) fn is_assignment_prefix(&self) -> bool {
        matches!(self.pieces.as_slice(), [Piece::Plain(t)] if t.ends_with(b"="))
            && self.assignment().is_some_and(|(_, v)| v.pieces.is_empty())
    }
}

impl Parser<'_, '_> {
    /// The words `raw` expands to: braces (up to [`MAX_BRACE`]), then `~` and `$HOME`.
    pub(super) fn expand(&self, raw: &Raw) -> Vec<Word> {
        let has_brace = raw.pieces.iter().any(|p| matches!(p, Piece::Plain(t) if t.contains(&b'{')));
        let tilde = matches!(raw.pieces.first(), Some(Piece::Plain(t)) if t.first() == Some(&b'~'));
        if !has_brace && !tilde {
            // Most words: their pieces joined, no character by character.
            let mut text = Vec::new();
            for piece in &raw.pieces {
                match piece {
                    Piece::Plain(t) | Piece::Quoted(t) => text.extend_from_slice(t),
                    Piece::Home => match &self.out.home {
                        Some(home) => text.extend_from_slice(home.as_os_str().as_encoded_bytes()),
                        None => return vec![Word::Unknown],
                    },
                    Piece::Unknown => return vec![Word::Unknown],
                }
            }
            return vec![lit(text)];
        }
        if !has_brace {
            return vec![self.render(&flatten(raw))];
        }
        let items = flatten(raw);
        let opens = items.iter().filter(|i| **i == Item::Plain(b'{')).count();
        if items.len() > MAX_BRACE_WORD || opens > MAX_BRACES {
            return vec![Word::Unknown];
        }
        match braces(&items) {
            Some(all) => all.iter().map(|items| self.render(items)).collect(),
            None => vec![Word::Unknown],
        }
    }

    fn render(&self, items: &[Item]) -> Word {
        let mut text = Vec::with_capacity(items.len());
        let mut rest = items;
        // `~` and `~/…` unquoted at the start: the home folder (`~user`, `~+`, `~-`: unknown).
        if let [Item::Plain(b'~'), after @ ..] = items {
            match after.first() {
                None | Some(Item::Plain(b'/')) => {
                    let Some(home) = &self.out.home else { return Word::Unknown };
                    text.extend_from_slice(home.as_os_str().as_encoded_bytes());
                    rest = after;
                }
                _ => return Word::Unknown,
            }
        }
        for item in rest {
            match item {
                Item::Plain(b) | Item::Quoted(b) => text.push(*b),
                Item::Home => match &self.out.home {
                    Some(home) => text.extend_from_slice(home.as_os_str().as_encoded_bytes()),
                    None => return Word::Unknown,
                },
                Item::Unknown => return Word::Unknown,
            }
        }
        lit(text)
    }
}

/// The word of these bytes: a NUL ends an argument.
fn lit(mut text: Vec<u8>) -> Word {
    if let Some(nul) = text.iter().position(|b| *b == 0) {
        text.truncate(nul);
    }
    Word::Lit(String::from_utf8(text).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

fn flatten(raw: &Raw) -> Vec<Item> {
    let mut items = Vec::new();
    for piece in &raw.pieces {
        match piece {
            Piece::Plain(t) => items.extend(t.iter().map(|b| Item::Plain(*b))),
            Piece::Quoted(t) => items.extend(t.iter().map(|b| Item::Quoted(*b))),
            Piece::Home => items.push(Item::Home),
            Piece::Unknown => items.push(Item::Unknown),
        }
    }
    items
}

/// Brace expansion: `a{b,c}d` is `abd acd`, `{1..3}` is `1 2 3`; `None` past [`MAX_BRACE`] words.
fn braces(items: &[Item]) -> Option<Vec<Vec<Item>>> {
    let mut done = Vec::new();
    let mut todo = vec![items.to_vec()];
    while let Some(word) = todo.pop() {
        match brace_at(&word) {
            None => done.push(word),
            Some((open, close, parts)) => {
                if done.len() + todo.len() + parts.len() > MAX_BRACE {
                    return None;
                }
                for part in parts.into_iter().rev() {
                    let mut next = word[..open].to_vec();
                    next.extend(part);
                    next.extend_from_slice(&word[close + 1..]);
                    todo.push(next);
                }
            }
        }
        if done.len() + todo.len() > MAX_BRACE {
            return None;
        }
    }
    Some(done)
}

/// The first expanding brace of `word`: where it opens and closes, and what it expands to.
fn brace_at(word: &[Item]) -> Option<(usize, usize, Vec<Vec<Item>>)> {
    for open in 0..word.len() {
        if word[open] != Item::Plain(b'{') {
            continue;
        }
        let mut level = 0usize;
        let mut commas = Vec::new();
        for (i, item) in word.iter().enumerate().skip(open + 1) {
            match item {
                Item::Plain(b'{') => level += 1,
                Item::Plain(b'}') if level > 0 => level -= 1,
                Item::Plain(b'}') => {
                    if !commas.is_empty() {
                        let mut parts = Vec::new();
                        let mut from = open + 1;
                        for comma in commas.iter().copied().chain(std::iter::once(i)) {
                            parts.push(word[from..comma].to_vec());
                            from = comma + 1;
                        }
                        return Some((open, i, parts));
                    }
                    if let Some(parts) = sequence(&word[open + 1..i]) {
                        return Some((open, i, parts));
                    }
                    break;
                }
                Item::Plain(b',') if level == 0 => commas.push(i),
                _ => {}
            }
        }
    }
    None
}

/// `1..5`, `a..e`, `10..1..2`: the sequence, or `None` when it is not one (or too long).
fn sequence(inner: &[Item]) -> Option<Vec<Vec<Item>>> {
    let text: Vec<u8> =
        inner.iter().map(|i| if let Item::Plain(b) = i { Some(*b) } else { None }).collect::<Option<_>>()?;
    let text = String::from_utf8(text).ok()?;
    let parts: Vec<&str> = text.split("..").collect();
    if !(2..=3).contains(&parts.len()) {
        return None;
    }
    let step: i64 = parts.get(2).map_or(Some(1i64), |s| s.parse::<i64>().ok())?.checked_abs()?.max(1);
    let word = |s: String| s.bytes().map(Item::Plain).collect::<Vec<_>>();
    if let (Ok(a), Ok(b)) = (parts[0].parse::<i64>(), parts[1].parse::<i64>()) {
        if a.checked_sub(b)?.unsigned_abs() / step as u64 > MAX_BRACE as u64 {
            return None;
        }
        let up = a <= b;
        let mut out = Vec::new();
        let mut n = a;
        while (up && n <= b) || (!up && n >= b) {
            out.push(word(n.to_string()));
            let next = if up { n.checked_add(step) } else { n.checked_sub(step) };
            let Some(next) = next else { break };
            n = next;
        }
        return Some(out);
    }
    let (a, b) = (parts[0].as_bytes(), parts[1].as_bytes());
    if let ([a], [b]) = (a, b) {
        if a.is_ascii_alphabetic() && b.is_ascii_alphabetic() {
            let (lo, hi) = ((*a).min(*b), (*a).max(*b));
            let mut out: Vec<Vec<Item>> = (lo..=hi).step_by(step as usize).map(|c| vec![Item::Plain(c)]).collect();
            if a > b {
                out.reverse();
            }
            return Some(out);
        }
    }
    None
}
