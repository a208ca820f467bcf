//! What a shell would run for a command line, as far as the line itself tells: the programs it
//! starts, with which words, in which directory. The guard judges these, never the raw text.
//!
//! The line is read as bash reads it, leniently: quotes (`'…'`, `"…"`, `$'…'`), backslashes and
//! line continuations, comments, the separators (`;` `&&` `||` `|` `|&` `&` newlines), subshells
//! and groups, `case`, here-documents and here-strings, redirections (skipped), brace expansion,
//! `~` and `$HOME`. What only a run can tell (any other variable, a command's output, a glob's
//! matches, input) is [`Word::Unknown`]: it may be anything, even several words or none.
//!
//! Commands inside commands are read too, wherever the shell would run them: `$(…)`, backticks,
//! `<(…)`, `sh|bash|dash|zsh|ksh -c STRING`, `eval`, a script a shell reads from a here-document
//! or from `echo … |`, and the programs that run other programs (`env`, `command`, `exec`,
//! `nohup`, `sudo`, `doas`, `time`, `nice`, `timeout`, `stdbuf`, `setsid`, `watch`, `busybox`,
//! `builtin`, `xargs`, `find -exec`). Every program a line names is an [`Invocation`], the wrappers
//! as well as what they run; a program whose name only a run can tell is one too, with an unknown
//! name, and its words are also read as a command of their own (it may be a wrapper).
//!
//! `cd` (and `pushd`, `popd`) is followed through the line: after `cd DIR &&` the next command
//! runs in DIR; after `cd DIR;` (or `||`, `|`, `&`) in DIR or where it was (the `cd` may fail);
//! a subshell's `cd` ends with it. `cd` alone and `cd ~` go home; `cd -` and `cd $X` lead where
//! the line does not tell (a directory of `None`).
//!
//! What cannot be read makes [`Parsed::unreadable`] say why: a line over [`MAX_LEN`] bytes,
//! nesting deeper than [`MAX_DEPTH`] (what lies past it is not read), an unterminated quote or
//! `$(`, a shell given a script only a run can tell (`sh -c "$X"`, `eval "$X"`, `curl … | sh`),
//! more than 256 programs in one command (`MAX_PROGRAMS`), more than 2 MiB of scripts, 65,536
//! words or 4 MiB of words in all (`MAX_READ`, `MAX_KEPT_WORDS`, `MAX_KEPT_BYTES`). A program is given at most 4096 words
//! (`MAX_WORDS`; an unknown one stands for the rest), a word's braces at most 256.
//! Not read at all: the scripts and files a command names (`bash x.sh`, `source x`, `make`), the
//! functions and aliases defined before this line, `$CDPATH`.

mod lex;
mod run;
#[cfg(test)]
mod tests;
mod words;

use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

/// The longest line read; a longer one is unreadable.
pub const MAX_LEN: usize = 1 << 20;
/// How deep commands nest (subshells, groups, `$(…)`, `sh -c`, `eval`, `case`) before the rest is
/// unreadable.
pub const MAX_DEPTH: usize = 32;
/// The most directories a command is followed into (past it, one of them is "unknown").
const MAX_DIRS: usize = 8;
/// The most words one program is given (past them, one unknown word stands for the rest).
const MAX_WORDS: usize = 4096;
/// The most programs one simple command starts (wrappers, `xargs`, `find -exec`): past them, the
/// rest is unreadable.
const MAX_PROGRAMS: usize = 256;
/// The most text read in all, the line and the scripts inside it (`eval`, `sh -c`, `watch`, whose
/// words braces may have multiplied), and the most words kept in all, the programs' names
/// included: past either, the rest is unreadable. Together they bound the time and memory a line
/// costs the session's actor, which judges it before it answers.
const MAX_READ: usize = 2 * MAX_LEN;
const MAX_KEPT_WORDS: usize = 1 << 16;
/// The most text the words kept hold in all (braces can make each word of a line long).
const MAX_KEPT_BYTES: usize = 4 * MAX_LEN;

/// A word as the shell would hand it to a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    /// Known text.
    Lit(String),
    /// Only a run can tell: it may be any text, several words or none.
    Unknown,
    /// A path `find` finds under `root` (absolute): its `{}`, and what it pipes to `xargs`.
    /// `with_root`: the root itself is one of them (unless it is spelled `.` or `..`, which `rm`
    /// refuses).
    Found { root: PathBuf, with_root: bool },
}

impl Word {
    /// The text, when it is known.
    pub fn lit(&self) -> Option<&str> {
        match self {
            Self::Lit(s) => Some(s),
            _ => None,
        }
    }
}

/// The directories a command may run in: each known, or `None` where the line does not tell.
pub type Dirs = Rc<Vec<Option<PathBuf>>>;

/// A program the line starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// Its name without its directory (`/usr/bin/git` is `git`), or unknown (`$CMD`).
    pub program: Word,
    pub args: Vec<Word>,
    /// The variables set for it (`FOO=1 git …`, `env FOO=1 git …`).
    pub env: Vec<(String, Word)>,
    pub dirs: Dirs,
}

/// What a line runs.
#[derive(Debug, Default)]
pub struct Parsed {
    pub invocations: Vec<Invocation>,
    /// Why part of the line could not be read (the first reason), if it could not.
    pub unreadable: Option<String>,
}

/// Reads `line` as a shell started in `cwd` with `home` as `$HOME` would run it.
pub fn parse(line: &str, cwd: &Path, home: Option<&Path>) -> Parsed {
    let mut out =
        Out { parsed: Parsed::default(), home: home.map(normalize), read: line.len(), kept: 0, kept_bytes: 0 };
    if line.len() > MAX_LEN {
        out.parsed.unreadable = Some(format!("the command is longer than {} KiB", MAX_LEN / 1024));
        return out.parsed;
    }
    let mut parser = Parser::new(line.as_bytes(), 0, Rc::new(vec![Some(normalize(cwd))]), &mut out);
    parser.list(Stop::Eof);
    parser.finish();
    out.parsed
}

/// What a whole parse gathers, shared by the nested ones.
struct Out {
    parsed: Parsed,
    /// `$HOME`, until the line assigns it.
    home: Option<PathBuf>,
    /// The text read so far ([`MAX_READ`]) and the words kept ([`MAX_KEPT_WORDS`], holding
    /// [`MAX_KEPT_BYTES`]).
    read: usize,
    kept: usize,
    kept_bytes: usize,
}

impl Out {
    /// Whether reading `bytes` more stays within [`MAX_READ`] (past it, the rest is unreadable).
    fn may_read(&mut self, bytes: usize) -> bool {
        self.read = self.read.saturating_add(bytes);
        self.within()
    }

    /// Whether keeping `words` more stays within [`MAX_KEPT_WORDS`] and [`MAX_KEPT_BYTES`].
    fn may_keep(&mut self, words: &[Word]) -> bool {
        self.kept = self.kept.saturating_add(words.len());
        let bytes: usize = words.iter().map(|w| w.lit().map_or(0, str::len)).sum();
        self.kept_bytes = self.kept_bytes.saturating_add(bytes);
        self.within()
    }

    fn within(&mut self) -> bool {
        if !self.exhausted() {
            return true;
        }
        self.unreadable(&format!(
            "a command too large to read whole (over {} MiB of scripts, {MAX_KEPT_WORDS} words or {} MiB of \
             words in all)",
            MAX_READ >> 20,
            MAX_KEPT_BYTES >> 20
        ));
        false
    }

    fn exhausted(&self) -> bool {
        self.read > MAX_READ || self.kept > MAX_KEPT_WORDS || self.kept_bytes > MAX_KEPT_BYTES
    }

    fn unreadable(&mut self, why: &str) {
        if self.parsed.unreadable.is_none() {
            self.parsed.unreadable = Some(why.to_string());
        }
    }
}

/// Where a list of commands ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Eof,
    /// `)`: a subshell, `$(…)`, `<(…)`.
    Paren,
    /// `}` in command position: a group.
    Brace,
    /// `;;` (or `;&`, `;;&`) or `esac`: an item of a `case`.
    CaseItem,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Eof,
    Paren,
    Brace,
    /// `esac`: true when the whole `case` ended.
    CaseItem {
        esac: bool,
    },
}

/// What a command writes, for the one after a `|`.
#[derive(Debug, Clone)]
enum Output {
    /// Only a run can tell.
    Unknown,
    /// Words it prints (`echo a b`), or the paths `find` prints (as [`Word::Found`]).
    Words(Vec<Word>),
}

/// Where a command's input comes from.
#[derive(Debug, Clone)]
enum Stdin {
    /// Whatever the line's was.
    Inherited,
    /// A file (`< x`).
    File,
    Pipe(Output),
    /// A here-string's text, when known.
    Text(Option<String>),
    /// The here-document of this index (its body comes after the line's end).
    Heredoc(usize),
}

/// A here-document of the line being read.
#[derive(Debug)]
struct Heredoc {
    delimiter: Vec<u8>,
    /// `<<-`: leading tabs are stripped.
    strip_tabs: bool,
    /// The delimiter was unquoted: `$(…)` and the like in the body run.
    expands: bool,
    /// Read, once the line's end is reached.
    body: Option<Vec<u8>>,
    /// A shell reads it as its script, in these directories.
    script_for: Option<Dirs>,
    /// The directories of the command it is given to (where its expansions run).
    dirs: Dirs,
}

struct Parser<'s, 'o> {
    src: &'s [u8],
    pos: usize,
    depth: usize,
    dirs: Dirs,
    /// The directories before the last `cd`, until the separator after it says whether it ran.
    before_cd: Option<Dirs>,
    heredocs: Vec<Heredoc>,
    /// How many of them have their body (they are read in order).
    heredocs_read: usize,
    /// A newline passed with here-document bodies to read after it.
    heredocs_due: bool,
    out: &'o mut Out,
}

impl<'s, 'o> Parser<'s, 'o> {
    fn new(src: &'s [u8], depth: usize, dirs: Dirs, out: &'o mut Out) -> Self {
        Self {
            src,
            pos: 0,
            depth,
            dirs,
            before_cd: None,
            heredocs: Vec::new(),
            heredocs_read: 0,
            heredocs_due: false,
            out,
        }
    }

    /// The end of the source: here-documents whose body never came are empty.
    fn finish(&mut self) {
        self.heredocs_due = false;
        self.read_heredocs();
    }

    /// Nesting one level deeper, unless that is past [`MAX_DEPTH`]: then the rest of this source
    /// is unreadable and skipped.
    fn descend(&mut self) -> bool {
        if self.depth >= MAX_DEPTH {
            self.out.unreadable(&format!("commands nested more than {MAX_DEPTH} levels deep"));
            self.pos = self.src.len();
            return false;
        }
        self.depth += 1;
        true
    }

    /// Reads `text` as a script of its own one level deeper, in the current directories; a
    /// script of this same shell (`eval`) leaves its `cd`s behind.
    fn nested(&mut self, text: &[u8], same_shell: bool) {
        if self.depth >= MAX_DEPTH {
            self.out.unreadable(&format!("commands nested more than {MAX_DEPTH} levels deep"));
            return;
        }
        if !self.out.may_read(text.len()) {
            return;
        }
        let start = self.dirs.clone();
        let mut inner = Parser::new(text, self.depth + 1, start.clone(), &mut *self.out);
        inner.list(Stop::Eof);
        inner.finish();
        // Its `cd`s stay, and may not have run: the next separator settles them.
        if same_shell && !same_dirs(&inner.dirs, &start) {
            self.before_cd = Some(union(&inner.before_cd.unwrap_or_else(|| start.clone()), &start));
            self.dirs = inner.dirs;
        }
    }

    /// Whether a `cd` before this separator moved the shell: after `&&` it did; after anything
    /// else it may not have.
    fn settle_cd(&mut self, and: bool) {
        if let Some(before) = self.before_cd.take() {
            if !and {
                self.dirs = union(&self.dirs, &before);
            }
        }
    }

    /// Commands up to `stop` (or the end of the source).
    fn list(&mut self, stop: Stop) -> Ended {
        use lex::{Op, Tok};
        let mut pipe: Option<Output> = None;
        let mut pending: Option<Tok> = None;
        loop {
            if self.out.exhausted() {
                self.pos = self.src.len();
                return Ended::Eof;
            }
            let tok = match pending.take() {
                Some(tok) => tok,
                None => self.next_tok(),
            };
            match &tok {
                Tok::Eof => return Ended::Eof,
                Tok::Op(Op::RParen) => {
                    if stop == Stop::Paren {
                        return Ended::Paren;
                    }
                    continue;
                }
                Tok::Op(Op::CaseEnd) => {
                    if stop == Stop::CaseItem {
                        return Ended::CaseItem { esac: false };
                    }
                    self.settle_cd(false);
                    continue;
                }
                Tok::Newline | Tok::Op(Op::Semi | Op::Amp | Op::And | Op::Or | Op::Pipe) => {
                    self.settle_cd(matches!(tok, Tok::Op(Op::And)));
                    pipe = None;
                    continue;
                }
                Tok::Word(raw) if stop == Stop::Brace && raw.is_plain("}") => return Ended::Brace,
                Tok::Word(raw) if stop == Stop::CaseItem && raw.is_plain("esac") => {
                    return Ended::CaseItem { esac: true }
                }
                _ => {}
            }
            let (output, after) = self.command(tok, pipe.take());
            match after {
                Tok::Op(Op::Pipe) => {
                    pipe = Some(output);
                    self.settle_cd(false);
                }
                Tok::Op(Op::And) => self.settle_cd(true),
                Tok::Newline | Tok::Op(Op::Semi | Op::Amp | Op::Or) => self.settle_cd(false),
                other => pending = Some(other),
            }
        }
    }

    /// One command (simple or compound) starting with `tok`; what it writes, and the token that
    /// ended it.
    fn command(&mut self, tok: lex::Tok, stdin: Option<Output>) -> (Output, lex::Tok) {
        use lex::{Op, Tok};
        let mut tok = tok;
        // Reserved words that only lead into a command.
        while let Tok::Word(raw) = &tok {
            match raw.plain() {
                Some(
                    b"!" | b"if" | b"then" | b"else" | b"elif" | b"fi" | b"do" | b"done" | b"while" | b"until"
                    | b"esac" | b"coproc",
                ) => tok = self.next_tok(),
                Some(b"function") => {
                    let _name = self.next_tok();
                    tok = self.next_tok();
                }
                Some(b"case") => {
                    self.case_clause();
                    return (Output::Unknown, self.next_tok());
                }
                Some(b"for" | b"select") => return (Output::Unknown, self.skip_to_separator()),
                Some(b"[[") => return (Output::Unknown, self.skip_conditional()),
                _ => break,
            }
        }
        match tok {
            Tok::Op(Op::LParen) => {
                let (dirs, before_cd) = (self.dirs.clone(), self.before_cd.take());
                if self.descend() {
                    let ended = self.list(Stop::Paren);
                    self.depth -= 1;
                    if ended != Ended::Paren {
                        self.out.unreadable("an unbalanced `(`");
                    }
                }
                (self.dirs, self.before_cd) = (dirs, before_cd);
                (Output::Unknown, self.after_compound())
            }
            Tok::Word(raw) if raw.is_plain("{") => {
                if self.descend() {
                    self.list(Stop::Brace);
                    self.depth -= 1;
                }
                (Output::Unknown, self.after_compound())
            }
            Tok::Word(_) | Tok::Op(Op::Redirect(_)) => self.simple(tok, stdin),
            other => (Output::Unknown, other),
        }
    }

    /// The redirections after a compound command; the token after them.
    fn after_compound(&mut self) -> lex::Tok {
        loop {
            match self.next_tok() {
                lex::Tok::Op(lex::Op::Redirect(r)) => {
                    let _ = self.redirect(r);
                }
                other => return other,
            }
        }
    }

    /// `for NAME in WORDS` or `select …`: words that are no command (their `$(…)` still run).
    fn skip_to_separator(&mut self) -> lex::Tok {
        use lex::{Op, Tok};
        loop {
            match self.next_tok() {
                Tok::Word(_) | Tok::Op(Op::LParen | Op::RParen | Op::Redirect(_)) => {}
                other => return other,
            }
        }
    }

    /// `[[ … ]]`: a test, no command (its `$(…)` still run).
    fn skip_conditional(&mut self) -> lex::Tok {
        use lex::Tok;
        loop {
            match self.next_tok() {
                Tok::Word(raw) if raw.is_plain("]]") => return self.next_tok(),
                Tok::Eof => return Tok::Eof,
                Tok::Newline => return Tok::Newline,
                _ => {}
            }
        }
    }

    /// `case WORD in PATTERN) LIST ;; … esac`, after `case`.
    fn case_clause(&mut self) {
        use lex::{Op, Tok};
        loop {
            match self.next_tok() {
                Tok::Word(raw) if raw.is_plain("in") => break,
                Tok::Eof => return,
                _ => {}
            }
        }
        loop {
            let mut tok = self.next_tok();
            while matches!(tok, Tok::Newline) {
                tok = self.next_tok();
            }
            match &tok {
                Tok::Eof => return,
                Tok::Word(raw) if raw.is_plain("esac") => return,
                _ => {}
            }
            // The patterns, up to their `)`.
            while !matches!(tok, Tok::Op(Op::RParen)) {
                if matches!(tok, Tok::Eof) {
                    return;
                }
                tok = self.next_tok();
            }
            if !self.descend() {
                return;
            }
            let ended = self.list(Stop::CaseItem);
            self.depth -= 1;
            if ended != (Ended::CaseItem { esac: false }) {
                return;
            }
        }
    }

    /// A simple command: assignments, words and redirections, up to the token that ends it.
    fn simple(&mut self, first: lex::Tok, piped: Option<Output>) -> (Output, lex::Tok) {
        use lex::{Op, Tok};
        let mut assigns: Vec<(String, words::Raw)> = Vec::new();
        let mut words: Vec<words::Raw> = Vec::new();
        let mut stdin = piped.map_or(Stdin::Inherited, Stdin::Pipe);
        let mut tok = first;
        let after = loop {
            match tok {
                Tok::Word(raw) => {
                    if words.is_empty() {
                        if let Some(assign) = raw.assignment() {
                            assigns.push(assign);
                            tok = self.next_tok();
                            continue;
                        }
                    }
                    words.push(raw);
                }
                Tok::Op(Op::Redirect(r)) => {
                    if let Some(input) = self.redirect(r) {
                        stdin = input;
                    }
                }
                other => break other,
            }
            tok = self.next_tok();
        };
        let env: Vec<(String, Word)> = assigns.into_iter().map(|(name, value)| (name, self.one_word(&value))).collect();
        let words = capped(words.iter().flat_map(|raw| self.expand(raw)));
        (self.run(words, env, stdin), after)
    }

    /// The redirection `r`, its target word read: the input it gives the command, if any.
    fn redirect(&mut self, r: lex::Redirect) -> Option<Stdin> {
        use lex::{Redirect, Tok};
        let target = match self.next_tok() {
            Tok::Word(raw) => raw,
            // `> ;`: bash refuses the line; nothing to read.
            _ => return None,
        };
        match r {
            Redirect::Output => None,
            Redirect::Input => Some(Stdin::File),
            Redirect::HereString => Some(Stdin::Text(self.one_word(&target).lit().map(|s| format!("{s}\n")))),
            Redirect::Heredoc { strip_tabs } => {
                let (delimiter, quoted) = target.delimiter();
                self.heredocs.push(Heredoc {
                    delimiter,
                    strip_tabs,
                    expands: !quoted,
                    body: None,
                    script_for: None,
                    dirs: self.dirs.clone(),
                });
                Some(Stdin::Heredoc(self.heredocs.len() - 1))
            }
        }
    }

    /// A here-document's body is read: its expansions run, and a shell reads it as a script.
    fn heredoc_read(&mut self, i: usize) {
        let body = self.heredocs[i].body.clone().unwrap_or_default();
        let dirs = std::mem::replace(&mut self.dirs, self.heredocs[i].dirs.clone());
        if self.heredocs[i].expands {
            self.expansions_of(&body);
        }
        if let Some(dirs) = self.heredocs[i].script_for.take() {
            let here = std::mem::replace(&mut self.dirs, dirs);
            self.nested(&body, false);
            self.dirs = here;
        }
        self.dirs = dirs;
    }

    /// One word for a place where the shell makes no more than one (an assignment's value, a
    /// here-string): unknown when it would expand to several.
    fn one_word(&mut self, raw: &words::Raw) -> Word {
        let mut words = self.expand(raw);
        if words.len() == 1 {
            words.pop().unwrap_or(Word::Unknown)
        } else {
            Word::Unknown
        }
    }
}

/// The first [`MAX_WORDS`] of `words`, and one unknown word for any past them.
fn capped(mut words: impl Iterator<Item = Word>) -> Vec<Word> {
    let mut out: Vec<Word> = words.by_ref().take(MAX_WORDS).collect();
    if words.next().is_some() {
        out.push(Word::Unknown);
    }
    out
}

/// The directories of both, without repeats; past [`MAX_DIRS`] one of them is unknown.
fn union(a: &Dirs, b: &Dirs) -> Dirs {
    if Rc::ptr_eq(a, b) {
        return a.clone();
    }
    let mut all: Vec<Option<PathBuf>> = a.as_ref().clone();
    for dir in b.iter() {
        if !all.iter().any(|d| same_dir(d, dir)) {
            all.push(dir.clone());
        }
    }
    if all.len() > MAX_DIRS {
        all.truncate(MAX_DIRS - 1);
        all.push(None);
    }
    Rc::new(all)
}

/// Whether two directories are the same: their text, as every one here is normalized (comparing
/// `Path`s component by component, from the back, cost a third of the parser's time).
fn same_dir(a: &Option<PathBuf>, b: &Option<PathBuf>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.as_os_str() == b.as_os_str(),
        (a, b) => a.is_none() && b.is_none(),
    }
}

fn same_dirs(a: &Dirs, b: &Dirs) -> bool {
    Rc::ptr_eq(a, b) || (a.len() == b.len() && a.iter().zip(b.iter()).all(|(a, b)| same_dir(a, b)))
}

/// The path with `.` and `..` resolved as text (nothing need exist; `..` of `/` is `/`).
pub fn normalize(path: &Path) -> PathBuf {
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

/// `path` resolved from `dir` (`None`: where the line does not tell).
pub fn resolve(dir: Option<&Path>, path: &str) -> Option<PathBuf> {
    if path.starts_with('/') {
        return Some(normalize(Path::new(path)));
    }
    dir.map(|d| normalize(&d.join(path)))
}

/// A program's name without its directory.
pub fn basename(path: &str) -> &str {
    match path.trim_end_matches('/').rsplit_once('/') {
        Some((_, name)) if !name.is_empty() => name,
        _ => path,
    }
}

/// `find`'s starting points, whether it follows symbolic links (`-L`, `-follow`: then what it
/// finds may lie anywhere), and where its expression begins.
pub fn find_roots(args: &[Word]) -> (Vec<&Word>, bool, usize) {
    let mut i = 0;
    let mut follows = false;
    while let Some(Word::Lit(a)) = args.get(i) {
        match a.as_str() {
            "-L" | "-H" => follows = true,
            "-P" => {}
            "-D" => i += 1,
            a if a.starts_with("-O") => {}
            _ => break,
        }
        i += 1;
    }
    let i = i.min(args.len());
    let roots: Vec<&Word> = args[i..]
        .iter()
        .take_while(|w| match w {
            Word::Lit(a) => !(a.starts_with('-') || a == "(" || a == "!" || a == ","),
            _ => true,
        })
        .collect();
    follows |= args.iter().any(|w| w.lit() == Some("-follow"));
    let expression = i + roots.len();
    (roots, follows, expression)
}
