//! The words and operators of a line, as bash splits them: quotes, escapes, `$` expansions (the
//! commands inside `$(…)` and backticks are read where they stand), here-document bodies.

use super::words::{Piece, Raw};
use super::{Heredoc, Parser, Stop, MAX_DEPTH};

#[derive(Debug)]
pub(super) enum Tok {
    Word(Raw),
    Op(Op),
    Newline,
    Eof,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    And,
    Or,
    Semi,
    Amp,
    /// `|` and `|&`.
    Pipe,
    /// `;;`, `;&`, `;;&`.
    CaseEnd,
    LParen,
    RParen,
    Redirect(Redirect),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Redirect {
    /// `<`.
    Input,
    /// `>`, `>>`, `>|`, `<>`, `&>`, `&>>`, `>&`, `<&`.
    Output,
    /// `<<`, `<<-`.
    Heredoc { strip_tabs: bool },
    /// `<<<`.
    HereString,
}

impl Parser<'_, '_> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.src.get(self.pos + ahead).copied()
    }

    fn unterminated(&mut self, what: &str) {
        self.out.unreadable(&format!("an unterminated {what}"));
        self.pos = self.src.len();
    }

    /// The next word or operator.
    pub(super) fn next_tok(&mut self) -> Tok {
        // The bodies of the here-documents opened before the last newline start here: read now
        // that the command they feed has run.
        if self.heredocs_due {
            self.heredocs_due = false;
            self.read_heredocs();
        }
        loop {
            while let Some(c) = self.peek(0) {
                if c == b' ' || c == b'\t' || c == b'\r' {
                    self.pos += 1;
                } else if c == b'\\' && self.peek(1) == Some(b'\n') {
                    self.pos += 2;
                } else {
                    break;
                }
            }
            let Some(c) = self.peek(0) else { return Tok::Eof };
            let op = |n: usize, op: Op, p: &mut Self| {
                p.pos += n;
                Tok::Op(op)
            };
            return match (c, self.peek(1), self.peek(2)) {
                (b'#', _, _) => {
                    while self.peek(0).is_some_and(|c| c != b'\n') {
                        self.pos += 1;
                    }
                    continue;
                }
                (b'\n', _, _) => {
                    self.pos += 1;
                    self.heredocs_due = self.heredocs_read < self.heredocs.len();
                    Tok::Newline
                }
                (b';', Some(b';'), Some(b'&')) => op(3, Op::CaseEnd, self),
                (b';', Some(b';' | b'&'), _) => op(2, Op::CaseEnd, self),
                (b';', _, _) => op(1, Op::Semi, self),
                (b'&', Some(b'&'), _) => op(2, Op::And, self),
                (b'&', Some(b'>'), Some(b'>')) => op(3, Op::Redirect(Redirect::Output), self),
                (b'&', Some(b'>'), _) => op(2, Op::Redirect(Redirect::Output), self),
                (b'&', _, _) => op(1, Op::Amp, self),
                (b'|', Some(b'|'), _) => op(2, Op::Or, self),
                (b'|', Some(b'&'), _) => op(2, Op::Pipe, self),
                (b'|', _, _) => op(1, Op::Pipe, self),
                (b'(', _, _) => op(1, Op::LParen, self),
                (b')', _, _) => op(1, Op::RParen, self),
                (b'<' | b'>', Some(b'('), _) => Tok::Word(self.word()),
                (b'<', Some(b'<'), Some(b'<')) => op(3, Op::Redirect(Redirect::HereString), self),
                (b'<', Some(b'<'), Some(b'-')) => op(3, Op::Redirect(Redirect::Heredoc { strip_tabs: true }), self),
                (b'<', Some(b'<'), _) => op(2, Op::Redirect(Redirect::Heredoc { strip_tabs: false }), self),
                (b'<', Some(b'>' | b'&'), _) => op(2, Op::Redirect(Redirect::Output), self),
                (b'<', _, _) => op(1, Op::Redirect(Redirect::Input), self),
                (b'>', Some(b'>' | b'|' | b'&'), _) => op(2, Op::Redirect(Redirect::Output), self),
                (b'>', _, _) => op(1, Op::Redirect(Redirect::Output), self),
                _ => {
                    let raw = self.word();
                    if matches!(self.peek(0), Some(b'<' | b'>')) && raw.is_fd() {
                        continue;
                    }
                    Tok::Word(raw)
                }
            };
        }
    }

    /// A word, up to an unquoted blank or operator.
    fn word(&mut self) -> Raw {
        let mut raw = Raw::default();
        while let Some(c) = self.peek(0) {
            match c {
                b' ' | b'\t' | b'\r' | b'\n' | b';' | b'&' | b'|' | b')' => break,
                b'<' | b'>' if self.peek(1) == Some(b'(') => {
                    // `<(…)`, `>(…)`: a file the command's output or input goes through.
                    self.pos += 2;
                    self.substitution();
                    raw.push(Piece::Unknown);
                }
                b'<' | b'>' => break,
                b'(' if raw.ends_with_plain(b"@!?*+") => {
                    // An extended glob, `@(a|b)`: part of the word.
                    let start = self.pos;
                    self.skip_balanced();
                    for b in &self.src[start..self.pos] {
                        raw.plain_byte(*b);
                    }
                }
                b'(' if raw.is_assignment_prefix() => {
                    // `a=(…)`: an array; its words may hold commands.
                    self.pos += 1;
                    loop {
                        match self.next_tok() {
                            Tok::Op(Op::RParen) | Tok::Eof => break,
                            _ => {}
                        }
                    }
                    raw.push(Piece::Unknown);
                }
                b'(' => break,
                b'\\' => match self.peek(1) {
                    Some(b'\n') => self.pos += 2,
                    Some(next) => {
                        raw.quoted(&[next]);
                        self.pos += 2;
                    }
                    None => {
                        raw.plain_byte(b'\\');
                        self.pos += 1;
                    }
                },
                b'\'' => {
                    self.pos += 1;
                    match self.src[self.pos..].iter().position(|b| *b == b'\'') {
                        Some(end) => {
                            raw.quoted(&self.src[self.pos..self.pos + end]);
                            self.pos += end + 1;
                        }
                        None => self.unterminated("'…' quote"),
                    }
                }
                b'"' => {
                    self.pos += 1;
                    self.double_quoted(&mut raw);
                }
                b'$' => self.dollar(&mut raw, false),
                b'`' => {
                    self.backticks();
                    raw.push(Piece::Unknown);
                }
                _ => {
                    raw.plain_byte(c);
                    self.pos += 1;
                }
            }
        }
        raw
    }

    /// Past a parenthesised part, nested ones included (at the `(`).
    fn skip_balanced(&mut self) {
        let mut level = 0usize;
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            match c {
                b'(' => level += 1,
                b')' => {
                    level -= 1;
                    if level == 0 {
                        return;
                    }
                }
                b'\\' => self.pos = (self.pos + 1).min(self.src.len()),
                _ => {}
            }
        }
    }

    /// The inside of `"…"` (after the opening quote).
    fn double_quoted(&mut self, raw: &mut Raw) {
        loop {
            let Some(c) = self.peek(0) else { return self.unterminated("\"…\" quote") };
            match c {
                b'"' => {
                    self.pos += 1;
                    // An empty `""` is still a word.
                    raw.quoted(b"");
                    return;
                }
                b'\\' => match self.peek(1) {
                    Some(b'\n') => self.pos += 2,
                    Some(next @ (b'$' | b'`' | b'"' | b'\\')) => {
                        raw.quoted(&[next]);
                        self.pos += 2;
                    }
                    _ => {
                        raw.quoted(b"\\");
                        self.pos += 1;
                    }
                },
                b'$' => self.dollar(raw, true),
                b'`' => {
                    self.backticks();
                    raw.push(Piece::Unknown);
                }
                _ => {
                    raw.quoted(&[c]);
                    self.pos += 1;
                }
            }
        }
    }

    /// A `$` expansion (at the `$`).
    fn dollar(&mut self, raw: &mut Raw, in_quotes: bool) {
        match self.peek(1) {
            Some(b'(') if self.peek(2) == Some(b'(') => {
                self.pos += 3;
                self.arithmetic();
                raw.push(Piece::Unknown);
            }
            Some(b'(') => {
                self.pos += 2;
                self.substitution();
                raw.push(Piece::Unknown);
            }
            Some(b'{') => {
                self.pos += 2;
                let name = self.parameter();
                raw.push(if name.as_deref() == Some("HOME") { Piece::Home } else { Piece::Unknown });
            }
            Some(b'\'') if !in_quotes => {
                self.pos += 2;
                self.ansi_c(raw);
            }
            Some(b'"') if !in_quotes => {
                // `$"…"`: a translated string, read as `"…"`.
                self.pos += 2;
                self.double_quoted(raw);
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                self.pos += 1;
                let start = self.pos;
                while self.peek(0).is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
                    self.pos += 1;
                }
                let home = &self.src[start..self.pos] == b"HOME";
                raw.push(if home { Piece::Home } else { Piece::Unknown });
            }
            Some(c) if c.is_ascii_digit() || b"@*#?$!-".contains(&c) => {
                self.pos += 2;
                raw.push(Piece::Unknown);
            }
            _ => {
                self.pos += 1;
                if in_quotes {
                    raw.quoted(b"$");
                } else {
                    raw.plain_byte(b'$');
                }
            }
        }
    }

    /// `$(…)` or `<(…)` after its opening: the commands inside run in a subshell.
    fn substitution(&mut self) {
        let (dirs, before_cd) = (self.dirs.clone(), self.before_cd.take());
        if self.descend() {
            let ended = self.list(Stop::Paren);
            self.depth -= 1;
            if ended != super::Ended::Paren {
                self.out.unreadable("an unterminated `$(`");
            }
        }
        (self.dirs, self.before_cd) = (dirs, before_cd);
    }

    /// `$((…))` after its opening: arithmetic, whose `$(…)` still run.
    fn arithmetic(&mut self) {
        let mut level = 0usize;
        loop {
            let Some(c) = self.peek(0) else { return self.unterminated("`$((`") };
            match c {
                b'(' => {
                    level += 1;
                    self.pos += 1;
                }
                b')' if level == 0 => {
                    self.pos += if self.peek(1) == Some(b')') { 2 } else { 1 };
                    return;
                }
                b')' => {
                    level -= 1;
                    self.pos += 1;
                }
                b'$' => self.dollar(&mut Raw::default(), true),
                b'`' => self.backticks(),
                b'"' => {
                    self.pos += 1;
                    self.double_quoted(&mut Raw::default());
                }
                b'\'' => {
                    self.pos += 1;
                    match self.src[self.pos..].iter().position(|b| *b == b'\'') {
                        Some(end) => self.pos += end + 1,
                        None => return self.unterminated("'…' quote"),
                    }
                }
                b'\\' => self.pos += 2,
                _ => self.pos += 1,
            }
        }
    }

    /// `${…}` after its opening: the parameter's name when it is alone (`${HOME}`); the commands
    /// in its words (`${X:-$(…)}`) run.
    fn parameter(&mut self) -> Option<String> {
        let start = self.pos;
        while self.peek(0).is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
            self.pos += 1;
        }
        let name = String::from_utf8_lossy(&self.src[start..self.pos]).into_owned();
        if self.peek(0) == Some(b'}') {
            self.pos += 1;
            return Some(name);
        }
        let mut level = 0usize;
        loop {
            let Some(c) = self.peek(0) else {
                self.unterminated("`${`");
                return None;
            };
            match c {
                b'}' if level == 0 => {
                    self.pos += 1;
                    return None;
                }
                b'}' => {
                    level -= 1;
                    self.pos += 1;
                }
                b'$' if self.peek(1) == Some(b'{') => {
                    level += 1;
                    self.pos += 2;
                }
                b'$' => self.dollar(&mut Raw::default(), true),
                b'`' => self.backticks(),
                b'"' => {
                    self.pos += 1;
                    self.double_quoted(&mut Raw::default());
                }
                b'\'' => {
                    self.pos += 1;
                    match self.src[self.pos..].iter().position(|b| *b == b'\'') {
                        Some(end) => self.pos += end + 1,
                        None => {
                            self.unterminated("'…' quote");
                            return None;
                        }
                    }
                }
                b'\\' => self.pos += 2,
                _ => self.pos += 1,
            }
        }
    }

    /// `` `…` `` (at the backtick): its text, unescaped, is read as commands of a subshell.
    fn backticks(&mut self) {
        self.pos += 1;
        let mut inner = Vec::new();
        loop {
            let Some(c) = self.peek(0) else { return self.unterminated("`…` quote") };
            match c {
                b'`' => {
                    self.pos += 1;
                    break;
                }
                b'\\' if matches!(self.peek(1), Some(b'$' | b'`' | b'\\')) => {
                    inner.push(self.src[self.pos + 1]);
                    self.pos += 2;
                }
                _ => {
                    inner.push(c);
                    self.pos += 1;
                }
            }
        }
        let (dirs, before_cd) = (self.dirs.clone(), self.before_cd.take());
        self.nested(&inner, false);
        (self.dirs, self.before_cd) = (dirs, before_cd);
    }

    /// `$'…'` after its opening: the escapes bash knows, decoded.
    fn ansi_c(&mut self, raw: &mut Raw) {
        let mut text = Vec::new();
        loop {
            let Some(c) = self.peek(0) else { return self.unterminated("$'…' quote") };
            self.pos += 1;
            if c == b'\'' {
                break;
            }
            if c != b'\\' {
                text.push(c);
                continue;
            }
            let Some(e) = self.peek(0) else { continue };
            self.pos += 1;
            let simple = match e {
                b'a' => Some(7),
                b'b' => Some(8),
                b'e' | b'E' => Some(27),
                b'f' => Some(12),
                b'n' => Some(b'\n'),
                b'r' => Some(b'\r'),
                b't' => Some(b'\t'),
                b'v' => Some(11),
                b'\\' | b'\'' | b'"' | b'?' => Some(e),
                _ => None,
            };
            if let Some(b) = simple {
                text.push(b);
                continue;
            }
            let digits = |p: &mut Self, max: usize, radix: u32| {
                let mut value = 0u32;
                let mut n = 0;
                while n < max {
                    match p.peek(0).and_then(|c| (c as char).to_digit(radix)) {
                        Some(d) => {
                            value = value * radix + d;
                            p.pos += 1;
                            n += 1;
                        }
                        None => break,
                    }
                }
                (value, n)
            };
            match e {
                b'0'..=b'7' => {
                    self.pos -= 1;
                    let (value, _) = digits(self, 3, 8);
                    text.push(value as u8);
                }
                b'x' => match digits(self, 2, 16) {
                    (_, 0) => text.extend_from_slice(b"\\x"),
                    (value, _) => text.push(value as u8),
                },
                b'u' | b'U' => {
                    let (value, n) = digits(self, if e == b'u' { 4 } else { 8 }, 16);
                    match char::from_u32(value).filter(|_| n > 0) {
                        Some(ch) => text.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes()),
                        None => text.extend_from_slice(&[b'\\', e]),
                    }
                }
                b'c' => match self.peek(0) {
                    Some(ctl) => {
                        text.push(ctl & 0x1f);
                        self.pos += 1;
                    }
                    None => text.extend_from_slice(b"\\c"),
                },
                other => text.extend_from_slice(&[b'\\', other]),
            }
        }
        raw.quoted(&text);
    }

    /// At a newline: the bodies of the here-documents the line opened (at the source's end, what
    /// is left of it, or nothing).
    pub(super) fn read_heredocs(&mut self) {
        while self.heredocs_read < self.heredocs.len() {
            let i = self.heredocs_read;
            self.heredocs_read += 1;
            let Heredoc { delimiter, strip_tabs, .. } = &self.heredocs[i];
            let (delimiter, strip_tabs) = (delimiter.clone(), *strip_tabs);
            let mut body = Vec::new();
            while self.pos < self.src.len() {
                let end =
                    self.src[self.pos..].iter().position(|b| *b == b'\n').map_or(self.src.len(), |e| self.pos + e);
                let mut line = &self.src[self.pos..end];
                self.pos = (end + 1).min(self.src.len());
                if strip_tabs {
                    while let [b'\t', rest @ ..] = line {
                        line = rest;
                    }
                }
                if line == delimiter.as_slice() {
                    break;
                }
                body.extend_from_slice(line);
                body.push(b'\n');
            }
            self.heredocs[i].body = Some(body);
            self.heredoc_read(i);
        }
    }

    /// The commands of the expansions in `text` (an unquoted here-document's body) run.
    pub(super) fn expansions_of(&mut self, text: &[u8]) {
        if self.depth >= MAX_DEPTH {
            self.out.unreadable(&format!("commands nested more than {MAX_DEPTH} levels deep"));
            return;
        }
        if !self.out.may_read(text.len()) {
            return;
        }
        let mut inner = Parser::new(text, self.depth + 1, self.dirs.clone(), &mut *self.out);
        while let Some(c) = inner.peek(0) {
            match c {
                b'$' => inner.dollar(&mut Raw::default(), true),
                b'`' => inner.backticks(),
                b'\\' => inner.pos += 2,
                _ => inner.pos += 1,
            }
        }
    }
}
