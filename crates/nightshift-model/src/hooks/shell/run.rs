//! How the programs of a line run other programs: the wrappers (`env`, `sudo`, `timeout`, …),
//! the shells (`sh -c`, a script on their input), `eval`, `xargs`, `find -exec`; and `cd`.

use std::rc::Rc;

use super::{
    basename, capped, find_roots, resolve, union, Dirs, Invocation, Output, Parser, Stdin, Word, MAX_PROGRAMS,
};

/// One program to run with its words, as the line gives it.
struct Job {
    words: Vec<Word>,
    env: Vec<(String, Word)>,
    stdin: Stdin,
    dirs: Dirs,
    /// It runs in this shell (not in a process `xargs` or `find` starts): its `cd` counts, and
    /// what it writes is the command's.
    main: bool,
}

/// What became of a program.
enum Next {
    /// It runs these words as a command (a wrapper).
    Runs(Vec<Word>),
    /// Nothing more to follow; what it writes.
    Done(Output),
}

/// The shells whose `-c` and input are read as scripts.
const SHELLS: [&str; 9] = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh"];
/// The builtins that set a variable named in their words.
const SETTERS: [&str; 9] =
    ["export", "declare", "typeset", "local", "readonly", "read", "unset", "mapfile", "readarray"];

impl Parser<'_, '_> {
    /// Runs `words` (a simple command, expanded) as the shell would: every program it starts is
    /// an invocation. What the command writes, for a `|` after it.
    pub(super) fn run(&mut self, words: Vec<Word>, env: Vec<(String, Word)>, stdin: Stdin) -> Output {
        if env.iter().any(|(name, _)| name == "HOME") {
            self.out.home = None;
        }
        let mut output = Output::Unknown;
        let mut jobs = vec![Job { words, env, stdin, dirs: self.dirs.clone(), main: true }];
        let mut programs = 0;
        while let Some(mut job) = jobs.pop() {
            while let Some(first) = job.words.first() {
                programs += 1;
                if programs > MAX_PROGRAMS {
                    self.out.unreadable(&format!("a command that starts more than {MAX_PROGRAMS} programs"));
                    return output;
                }
                if !self.out.may_keep(&job.words) {
                    return output;
                }
                let name = first.lit().map(|p| basename(p).to_string());
                let args = job.words[1..].to_vec();
                self.out.parsed.invocations.push(Invocation {
                    program: name.clone().map_or(Word::Unknown, Word::Lit),
                    args: args.clone(),
                    env: job.env.clone(),
                    dirs: job.dirs.clone(),
                });
                match self.program(name.as_deref(), args, &mut job, &mut jobs) {
                    Next::Runs(words) => job.words = words,
                    Next::Done(out) => {
                        if job.main {
                            output = out;
                        }
                        break;
                    }
                }
            }
        }
        output
    }

    fn program(&mut self, name: Option<&str>, args: Vec<Word>, job: &mut Job, jobs: &mut Vec<Job>) -> Next {
        let Some(name) = name else {
            // A program only a run names: it may be a wrapper of its words, or a shell.
            if matches!(args.first(), Some(Word::Lit(_))) {
                jobs.push(Job {
                    words: args.clone(),
                    env: job.env.clone(),
                    stdin: Stdin::Inherited,
                    dirs: job.dirs.clone(),
                    main: false,
                });
            }
            if let Some(i) = args.iter().position(|w| w.lit() == Some("-c")) {
                self.script(args.get(i + 1), &job.dirs.clone());
            }
            return Next::Done(Output::Unknown);
        };
        let rest = |from: usize| Next::Runs(args.get(from..).map(<[Word]>::to_vec).unwrap_or_default());
        match name {
            "cd" | "pushd" | "popd" => {
                if job.main {
                    self.cd(name, &args);
                }
                Next::Done(Output::Unknown)
            }
            "env" => self.env(args, job),
            "sudo" => {
                let (i, chdir, runs) = options(&args, b"ugpCDhrtUTR", &SUDO_LONG, b"elvVK");
                if !runs {
                    return Next::Done(Output::Unknown);
                }
                chdir_to(job, chdir);
                let i = assignments(&args, i, job);
                rest(i)
            }
            "doas" => rest(options(&args, b"uC", &[], b"").0),
            "command" => {
                let (i, _, runs) = options(&args, b"", &[], b"vV");
                if runs {
                    rest(i)
                } else {
                    Next::Done(Output::Unknown)
                }
            }
            "exec" => rest(options(&args, b"a", &[], b"").0),
            "nice" => rest(options(&args, b"n", &["adjustment"], b"").0),
            "timeout" => rest(options(&args, b"ks", &["kill-after", "signal"], b"").0 + 1),
            "stdbuf" => rest(options(&args, b"ioe", &["input", "output", "error"], b"").0),
            "time" => rest(options(&args, b"fo", &["format", "output"], b"").0),
            "setsid" | "nohup" | "builtin" => rest(options(&args, b"", &[], b"").0),
            "busybox" => rest(0),
            "watch" => {
                let (i, _, _) = options(&args, b"n", &["interval"], b"");
                if args.iter().take(i).any(|w| matches!(w.lit(), Some("-x" | "--exec"))) {
                    return rest(i);
                }
                self.joined_script(&args[i.min(args.len())..], &job.dirs.clone());
                Next::Done(Output::Unknown)
            }
            "eval" => {
                if job.main {
                    self.eval(&args);
                } else {
                    self.joined_script(&args, &job.dirs.clone());
                }
                Next::Done(Output::Unknown)
            }
            _ if SHELLS.contains(&name) => {
                let stdin = std::mem::replace(&mut job.stdin, Stdin::Inherited);
                self.shell(&args, stdin, &job.dirs.clone());
                Next::Done(Output::Unknown)
            }
            "xargs" => {
                self.xargs(&args, job, jobs);
                Next::Done(Output::Unknown)
            }
            "find" => Next::Done(self.find(&args, job, jobs)),
            "echo" => {
                let escapes = args
                    .iter()
                    .take_while(|w| matches!(w.lit(), Some(a) if a.starts_with('-')))
                    .any(|w| w.lit().is_some_and(|a| a.contains('e')));
                Next::Done(if escapes { Output::Unknown } else { Output::Words(args) })
            }
            _ if SETTERS.contains(&name) => {
                let names_home = args.iter().any(|w| match w {
                    Word::Lit(a) => a == "HOME" || a.starts_with("HOME=") || a.starts_with("HOME+="),
                    _ => true,
                });
                if names_home {
                    self.out.home = None;
                }
                Next::Done(Output::Unknown)
            }
            _ => Next::Done(Output::Unknown),
        }
    }

    /// `cd`, `pushd`, `popd` in this shell: where the next commands may run.
    fn cd(&mut self, name: &str, args: &[Word]) {
        let operand = args.iter().find(|w| match w {
            Word::Lit(a) => !(name == "cd" && a.len() > 1 && a.starts_with('-')),
            _ => true,
        });
        let to: Vec<Option<std::path::PathBuf>> = match (name, operand) {
            ("popd", _) | ("pushd", None) => vec![None],
            ("cd", None) => vec![self.out.home.clone()],
            (_, Some(Word::Lit(p))) if p == "-" || (name == "pushd" && p.starts_with(['+', '-'])) => vec![None],
            (_, Some(Word::Lit(p))) => self.dirs.iter().map(|d| resolve(d.as_deref(), p)).collect(),
            _ => vec![None],
        };
        self.before_cd = Some(self.dirs.clone());
        self.dirs = union(&Rc::new(Vec::new()), &Rc::new(to));
    }

    /// `env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE…] [COMMAND…]`.
    fn env(&mut self, args: Vec<Word>, job: &mut Job) -> Next {
        let mut i = 0;
        let mut words = Vec::new();
        while let Some(Word::Lit(a)) = args.get(i) {
            let value = |i: usize, attached: &str| {
                if attached.is_empty() {
                    (args.get(i + 1).cloned(), i + 2)
                } else {
                    (Some(Word::Lit(attached.to_string())), i + 1)
                }
            };
            let (name, attached) = match a.split_once('=') {
                Some((name, v)) if name.starts_with("--") => (name, Some(v)),
                _ => (a.as_str(), None),
            };
            match name {
                "--" => {
                    i += 1;
                    break;
                }
                "-" | "-i" | "-0" | "-v" | "--ignore-environment" | "--null" | "--debug" => i += 1,
                "-u" | "--unset" => i = if attached.is_some() { i + 1 } else { i + 2 },
                "-C" | "--chdir" => {
                    let (dir, next) = value(i, attached.unwrap_or(""));
                    chdir_to(job, Some(dir.unwrap_or(Word::Unknown)));
                    i = next;
                }
                "-S" | "--split-string" => {
                    let (text, next) = value(i, attached.unwrap_or(""));
                    match text {
                        Some(Word::Lit(t)) => words.extend(t.split_whitespace().map(|w| Word::Lit(w.to_string()))),
                        _ => self.out.unreadable("`env -S` given a string only a run can tell"),
                    }
                    i = next;
                }
                _ if a.starts_with("-u") || a.starts_with("-C") || a.starts_with("-S") => {
                    let (flag, attached) = a.split_at(2);
                    let (v, next) = value(i, attached);
                    match flag {
                        "-C" => chdir_to(job, Some(v.unwrap_or(Word::Unknown))),
                        "-S" => match v {
                            Some(Word::Lit(t)) => {
                                words.extend(t.split_whitespace().map(|w| Word::Lit(w.to_string())));
                            }
                            _ => self.out.unreadable("`env -S` given a string only a run can tell"),
                        },
                        _ => {}
                    }
                    i = next;
                }
                _ if a.starts_with('-') && a.len() > 1 && !a.contains('=') => i += 1,
                _ => break,
            }
        }
        let i = assignments(&args, i, job);
        if job.env.iter().any(|(name, _)| name == "HOME") {
            self.out.home = None;
        }
        words.extend(args.into_iter().skip(i));
        Next::Runs(words)
    }

    /// A shell: its `-c` script, or the script it reads on its input.
    fn shell(&mut self, args: &[Word], stdin: Stdin, dirs: &Dirs) {
        let mut i = 0;
        let (mut command, mut reads_input) = (false, false);
        while let Some(Word::Lit(a)) = args.get(i) {
            if a == "--" || a == "-" {
                i += 1;
                break;
            }
            if let Some(long) = a.strip_prefix("--") {
                i += if matches!(long, "rcfile" | "init-file") { 2 } else { 1 };
                continue;
            }
            if a.len() > 1 && (a.starts_with('-') || a.starts_with('+')) {
                command |= a.starts_with('-') && a.contains('c');
                reads_input |= a.starts_with('-') && a.contains('s');
                // `-o NAME`, `-O NAME`: the option's name follows.
                i += if a.contains('o') || a.contains('O') { 2 } else { 1 };
                continue;
            }
            break;
        }
        if command {
            return self.script(args.get(i), dirs);
        }
        if args.get(i).is_some() && !reads_input {
            // A script file: not read.
            return;
        }
        match stdin {
            Stdin::Pipe(Output::Words(words)) => self.joined_script(&words, dirs),
            Stdin::Pipe(Output::Unknown) => self.out.unreadable("a script piped into a shell"),
            Stdin::Text(Some(text)) => self.nested_in(text.as_bytes(), dirs),
            Stdin::Text(None) => self.out.unreadable("a shell given a script only a run can tell"),
            Stdin::Heredoc(i) => {
                if let Some(heredoc) = self.heredocs.get_mut(i) {
                    heredoc.script_for = Some(dirs.clone());
                }
            }
            Stdin::File | Stdin::Inherited => {}
        }
    }

    /// A script given as a word (`sh -c WORD`).
    fn script(&mut self, word: Option<&Word>, dirs: &Dirs) {
        match word {
            Some(Word::Lit(text)) => self.nested_in(text.as_bytes(), dirs),
            Some(_) => self.out.unreadable("a shell given a script only a run can tell"),
            None => {}
        }
    }

    /// Words joined by spaces, read as a script (`watch a b`, `echo a b | sh`).
    fn joined_script(&mut self, words: &[Word], dirs: &Dirs) {
        let texts: Option<Vec<&str>> = words.iter().map(Word::lit).collect();
        match texts {
            Some(texts) => self.nested_in(texts.join(" ").as_bytes(), dirs),
            None => self.out.unreadable("a shell given a script only a run can tell"),
        }
    }

    /// `eval WORDS` in this shell: its `cd`s stay.
    fn eval(&mut self, words: &[Word]) {
        let texts: Option<Vec<&str>> = words.iter().map(Word::lit).collect();
        match texts {
            Some(texts) => self.nested(texts.join(" ").as_bytes(), true),
            None => self.out.unreadable("`eval` of text only a run can tell"),
        }
    }

    /// `text` read as a script of a shell of its own, in `dirs`.
    fn nested_in(&mut self, text: &[u8], dirs: &Dirs) {
        let here = std::mem::replace(&mut self.dirs, dirs.clone());
        let before_cd = self.before_cd.take();
        self.nested(text, false);
        (self.dirs, self.before_cd) = (here, before_cd);
    }

    /// `xargs [OPTIONS] [COMMAND [ARGS]]`: the command, given what it reads (as far as the line
    /// tells: what `echo` or `find` writes into it).
    fn xargs(&mut self, args: &[Word], job: &Job, jobs: &mut Vec<Job>) {
        let mut i = 0;
        let mut replace: Option<String> = None;
        let mut from_file = false;
        while let Some(Word::Lit(a)) = args.get(i) {
            if a == "--" {
                i += 1;
                break;
            }
            if let Some(long) = a.strip_prefix("--") {
                let (name, value) = long.split_once('=').map_or((long, None), |(n, v)| (n, Some(v)));
                match name {
                    "replace" => replace = Some(value.unwrap_or("{}").to_string()),
                    "arg-file" => from_file = true,
                    _ => {}
                }
                let takes = matches!(name, "arg-file" | "delimiter" | "max-args" | "max-procs" | "max-chars");
                i += if takes && value.is_none() { 2 } else { 1 };
                continue;
            }
            if !(a.starts_with('-') && a.len() > 1) {
                break;
            }
            let mut next = i + 1;
            for (j, c) in a.char_indices().skip(1) {
                let attached = &a[j + c.len_utf8()..];
                let mut value = || {
                    if attached.is_empty() {
                        next = i + 2;
                        args.get(i + 1).and_then(Word::lit).unwrap_or_default().to_string()
                    } else {
                        attached.to_string()
                    }
                };
                match c {
                    'I' => replace = Some(value()),
                    'i' => replace = Some(if attached.is_empty() { "{}".into() } else { attached.into() }),
                    'a' => {
                        from_file = true;
                        value();
                    }
                    'd' | 'E' | 'L' | 'n' | 'P' | 's' => {
                        value();
                    }
                    'e' | 'l' => {}
                    _ => continue,
                }
                break;
            }
            i = next;
        }
        let items: Vec<Word> = match (&job.stdin, from_file) {
            (Stdin::Pipe(Output::Words(words)), false) => words
                .iter()
                .flat_map(|w| match w {
                    Word::Lit(t) => t.split_whitespace().map(|p| Word::Lit(p.to_string())).collect(),
                    other => vec![other.clone()],
                })
                .collect(),
            _ => vec![Word::Unknown],
        };
        let mut command: Vec<Word> = args.get(i..).map(<[Word]>::to_vec).unwrap_or_default();
        if command.is_empty() {
            command.push(Word::Lit("echo".into()));
        }
        let words = match replace {
            Some(r) => capped(command.into_iter().flat_map(|w| match &w {
                Word::Lit(t) if *t == r => items.clone(),
                Word::Lit(t) if t.contains(r.as_str()) => vec![Word::Unknown],
                _ => vec![w],
            })),
            None => capped(command.into_iter().chain(items)),
        };
        jobs.push(Job { words, env: job.env.clone(), stdin: Stdin::Inherited, dirs: job.dirs.clone(), main: false });
    }

    /// `find`: the commands of its `-exec`s (`{}` is what it finds), and what it writes (the
    /// paths it finds, when it only prints them).
    fn find(&mut self, args: &[Word], job: &Job, jobs: &mut Vec<Job>) -> Output {
        let (roots, follows, _) = find_roots(args);
        let dot = Word::Lit(".".into());
        let roots = if roots.is_empty() { vec![&dot] } else { roots };
        let found: Vec<Word> = if follows {
            vec![Word::Unknown]
        } else {
            capped(roots.iter().flat_map(|root| {
                match root {
                    Word::Lit(p) => job
                        .dirs
                        .iter()
                        .map(|d| match resolve(d.as_deref(), p) {
                            Some(root) => Word::Found { root, with_root: !matches!(basename(p), "." | "..") },
                            None => Word::Unknown,
                        })
                        .collect(),
                    _ => vec![Word::Unknown],
                }
            }))
        };
        let mut acts = false;
        let mut i = 0;
        while i < args.len() {
            match args[i].lit() {
                Some(action @ ("-exec" | "-execdir" | "-ok" | "-okdir")) => {
                    let end = args[i + 1..]
                        .iter()
                        .position(|w| matches!(w.lit(), Some(";" | "+")))
                        .map_or(args.len(), |e| i + 1 + e);
                    let words = capped(args[i + 1..end].iter().flat_map(|w| match w {
                        Word::Lit(t) if t == "{}" => found.clone(),
                        Word::Lit(t) if t.contains("{}") => vec![Word::Unknown],
                        other => vec![other.clone()],
                    }));
                    // `-execdir` runs where each found file is.
                    let dirs = if action.ends_with("dir") { Rc::new(vec![None]) } else { job.dirs.clone() };
                    jobs.push(Job { words, env: Vec::new(), stdin: Stdin::Inherited, dirs, main: false });
                    acts = true;
                    i = end + 1;
                }
                Some("-delete" | "-printf" | "-fprint" | "-fprint0" | "-fprintf" | "-fls" | "-ls") => {
                    acts = true;
                    i += 1;
                }
                _ => i += 1,
            }
        }
        if acts {
            Output::Unknown
        } else {
            Output::Words(found)
        }
    }
}

/// sudo's long options that take a value.
const SUDO_LONG: [&str; 11] = [
    "user",
    "group",
    "prompt",
    "close-from",
    "chdir",
    "host",
    "role",
    "type",
    "other-user",
    "command-timeout",
    "chroot",
];

/// Past a wrapper's options: the index of its command, the directory it changes to (`-D`,
/// `--chdir`), and whether it runs a command at all (not with a flag of `no_command`).
/// `with_value`: the short options that take a value; `long_with_value` the long ones.
fn options(
    args: &[Word],
    with_value: &[u8],
    long_with_value: &[&str],
    no_command: &[u8],
) -> (usize, Option<Word>, bool) {
    let mut i = 0;
    let mut chdir = None;
    let mut runs = true;
    while let Some(Word::Lit(a)) = args.get(i) {
        if a == "--" {
            return (i + 1, chdir, runs);
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, value) = long.split_once('=').map_or((long, None), |(n, v)| (n, Some(v)));
            if name == "chdir" {
                chdir = Some(
                    value.map_or_else(|| args.get(i + 1).cloned().unwrap_or(Word::Unknown), |v| Word::Lit(v.into())),
                );
            }
            i += if long_with_value.contains(&name) && value.is_none() { 2 } else { 1 };
            continue;
        }
        if !(a.starts_with('-') && a.len() > 1) {
            break;
        }
        let bytes = a.as_bytes();
        let mut next = i + 1;
        for (j, c) in bytes.iter().enumerate().skip(1) {
            if no_command.contains(c) {
                runs = false;
            }
            if with_value.contains(c) {
                let value = if j + 1 < bytes.len() {
                    Word::Lit(a[j + 1..].to_string())
                } else {
                    next = i + 2;
                    args.get(i + 1).cloned().unwrap_or(Word::Unknown)
                };
                if *c == b'D' {
                    chdir = Some(value);
                }
                break;
            }
        }
        i = next;
    }
    (i, chdir, runs)
}

/// Past `NAME=VALUE` words from `i` (`sudo`'s and `env`'s), kept in the job's environment.
fn assignments(args: &[Word], mut i: usize, job: &mut Job) -> usize {
    while let Some(Word::Lit(a)) = args.get(i) {
        match a.split_once('=') {
            Some((name, value)) if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => {
                job.env.push((name.to_string(), Word::Lit(value.to_string())));
                i += 1;
            }
            _ => break,
        }
    }
    i
}

/// A wrapper runs its command in `dir` (relative to where it runs).
fn chdir_to(job: &mut Job, dir: Option<Word>) {
    let Some(dir) = dir else { return };
    let to: Vec<_> = match &dir {
        Word::Lit(p) => job.dirs.iter().map(|d| resolve(d.as_deref(), p)).collect(),
        _ => vec![None],
    };
    job.dirs = union(&Rc::new(Vec::new()), &Rc::new(to));
}
