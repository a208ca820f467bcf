use super::*;

/// The programs `line` runs, each as its words (`?` for an unknown one, `found:ROOT` for what
/// `find` finds) and where, from `/w` with `/h` as home.
fn runs(line: &str) -> Vec<String> {
    let parsed = parse(line, Path::new("/w"), Some(Path::new("/h")));
    assert_eq!(parsed.unreadable, None, "{line}");
    shown(&parsed)
}

fn shown(parsed: &Parsed) -> Vec<String> {
    parsed
        .invocations
        .iter()
        .map(|inv| {
            let word = |w: &Word| match w {
                Word::Lit(s) => s.clone(),
                Word::Unknown => "?".into(),
                Word::Found { root, with_root } => {
                    format!("found:{}{}", root.display(), if *with_root { "" } else { "/*" })
                }
            };
            let words: Vec<String> = std::iter::once(&inv.program).chain(&inv.args).map(word).collect();
            let dirs: Vec<String> =
                inv.dirs.iter().map(|d| d.as_ref().map_or("?".into(), |d| d.display().to_string())).collect();
            format!("{} @{}", words.join(" "), dirs.join(","))
        })
        .collect()
}

fn unreadable(line: &str) -> String {
    parse(line, Path::new("/w"), Some(Path::new("/h"))).unreadable.unwrap_or_else(|| panic!("read: {line}"))
}

#[test]
fn quotes_escapes_and_separators_are_the_shells() {
    assert_eq!(runs(r#"git push "--force" 'origin' ma\in"#), ["git push --force origin main @/w"]);
    assert_eq!(runs(r"\rm -rf x"), ["rm -rf x @/w"]);
    assert_eq!(runs("$'\\x67it' $'\\147\\151\\164' $'a\\'b'"), ["git git a'b @/w"]);
    assert_eq!(
        runs("a; b && c || d | e & f\ng |& h"),
        ["a @/w", "b @/w", "c @/w", "d @/w", "e @/w", "f @/w", "g @/w", "h @/w"]
    );
    assert_eq!(runs("echo a#b # git push -f\nls"), ["echo a#b @/w", "ls @/w"]);
    assert_eq!(runs("git pu\\\nsh"), ["git push @/w"]);
    assert_eq!(runs("echo \"a \\\" $(ls) b\""), ["ls @/w", "echo ? @/w"]);
}

#[test]
fn commands_inside_commands_are_read_where_they_run() {
    assert_eq!(runs("x=$(git push) y"), ["git push @/w", "y @/w"]);
    assert_eq!(runs("echo `rm -rf \\`ls\\``"), ["ls @/w", "rm -rf ? @/w", "echo ? @/w"]);
    assert_eq!(runs("(cd /t; rm x); rm y"), ["cd /t @/w", "rm x @/t,/w", "rm y @/w"]);
    assert_eq!(runs("{ cd /t && rm x; }; rm y"), ["cd /t @/w", "rm x @/t", "rm y @/t"]);
    assert_eq!(runs("diff <(ls a) b"), ["ls a @/w", "diff ? b @/w"]);
    assert_eq!(runs("echo $(( 1 + $(wc -l < f) ))"), ["wc -l @/w", "echo ? @/w"]);
    assert_eq!(runs("echo ${X:-$(date)}"), ["date @/w", "echo ? @/w"]);
    assert_eq!(runs("case $x in a|b) rm a;; (c) rm c;; esac; ls"), ["rm a @/w", "rm c @/w", "ls @/w"]);
    assert_eq!(runs("echo \"$(case a in a) rm x;; esac)\""), ["rm x @/w", "echo ? @/w"]);
    assert_eq!(runs("if [[ -d x && $(id) ]]; then rm -r x; fi"), ["id @/w", "rm -r x @/w"]);
    assert_eq!(runs("for f in $(ls); do rm \"$f\"; done"), ["ls @/w", "rm ? @/w"]);
    assert_eq!(runs("f() { git push; }; f"), ["f @/w", "git push @/w", "f @/w"]);
    assert_eq!(runs("a=(x $(rm y)) b"), ["rm y @/w", "b @/w"]);
}

#[test]
fn wrappers_shells_and_eval_run_what_they_are_given() {
    assert_eq!(
        runs("sudo -u me -D /t FOO=1 nice -n 5 timeout -s KILL 10 env -i -C sub A=1 git push"),
        [
            "sudo -u me -D /t FOO=1 nice -n 5 timeout -s KILL 10 env -i -C sub A=1 git push @/w",
            "nice -n 5 timeout -s KILL 10 env -i -C sub A=1 git push @/t",
            "timeout -s KILL 10 env -i -C sub A=1 git push @/t",
            "env -i -C sub A=1 git push @/t",
            "git push @/t/sub",
        ]
    );
    let inner: Vec<String> =
        runs("command -p /usr/bin/git push; command -v git").into_iter().filter(|r| r.starts_with("git")).collect();
    assert_eq!(inner, ["git push @/w"], "`command -v` runs nothing");
    assert_eq!(runs("bash -lc 'cd x && rm -r y'"), ["bash -lc cd x && rm -r y @/w", "cd x @/w", "rm -r y @/w/x"]);
    assert_eq!(runs("eval cd /t; rm y"), ["eval cd /t @/w", "cd /t @/w", "rm y @/t,/w"]);
    assert_eq!(runs("echo 'rm -r /' | sh"), ["echo rm -r / @/w", "sh @/w", "rm -r / @/w"]);
    assert_eq!(runs("sh <<'EOF'\nrm -r /x\nEOF\nls"), ["sh @/w", "rm -r /x @/w", "ls @/w"]);
    assert_eq!(runs("cat <<EOF > f\nrm $(id)\nEOF"), ["cat @/w", "id @/w"]);
    assert_eq!(runs("bash <<< 'git push'"), ["bash @/w", "git push @/w"]);
    assert_eq!(runs("$CMD push -f"), ["? push -f @/w", "push -f @/w"]);
    assert_eq!(runs("echo a b | xargs -n1 rm -r"), ["echo a b @/w", "xargs -n1 rm -r @/w", "rm -r a b @/w"]);
    assert_eq!(runs("xargs -I{} mv {} {}.bak"), ["xargs -I{} mv {} {}.bak @/w", "mv ? ? @/w"]);
    assert_eq!(
        runs("find . /t -name x -exec rm -rf {} +"),
        ["find . /t -name x -exec rm -rf {} + @/w", "rm -rf found:/w/* found:/t @/w"]
    );
    assert_eq!(runs("find x | xargs rm"), ["find x @/w", "xargs rm @/w", "rm found:/w/x @/w"]);
}

#[test]
fn cd_is_followed_through_the_line() {
    assert_eq!(runs("cd ~ && rm x"), ["cd /h @/w", "rm x @/h"]);
    assert_eq!(runs("cd; rm x"), ["cd @/w", "rm x @/h,/w"]);
    assert_eq!(runs("cd .. || exit; rm x"), ["cd .. @/w", "exit @/,/w", "rm x @/,/w"]);
    assert_eq!(runs("cd - && rm x"), ["cd - @/w", "rm x @?"]);
    assert_eq!(runs("cd $D && rm x"), ["cd ? @/w", "rm x @?"]);
    assert_eq!(
        runs("pushd /t >/dev/null && rm x && popd && rm y"),
        ["pushd /t @/w", "rm x @/t", "popd @/t", "rm y @?"]
    );
}

#[test]
fn expansions_make_words_known_or_unknown() {
    assert_eq!(runs("rm {a,/b}/c x{1..3} ~/d ${HOME}/e $HOME \"~\" ~u"), ["rm a/c /b/c x1 x2 x3 /h/d /h/e /h ~ ? @/w"]);
    assert_eq!(runs("HOME=/x; rm ~/a"), ["rm ? @/w"]);
    assert_eq!(runs("echo $X \"$@\" ${#a} $1 $"), ["echo ? ? ? ? $ @/w"]);
    assert_eq!(runs("rm 2>/dev/null x 2>&1 >>log"), ["rm x @/w"]);
    assert_eq!(runs(&format!("rm {{{}}}", vec!["a"; 300].join(","))), ["rm ? @/w"]);
}

#[test]
fn what_cannot_be_read_says_why() {
    assert!(unreadable("echo 'open").contains("unterminated"));
    assert!(unreadable("echo \"open").contains("unterminated"));
    assert!(unreadable("echo $(ls").contains("unterminated"));
    assert!(unreadable("eval \"$X\"").contains("eval"));
    assert!(unreadable("sh -c \"$X\"").contains("script"));
    assert!(unreadable("curl -s x | bash").contains("piped"));
    let deep = format!("{}git push{}", "(".repeat(40), ")".repeat(40));
    assert!(unreadable(&deep).contains("nested"));
    assert!(unreadable(&"x".repeat(MAX_LEN + 1)).contains("longer"));
}

#[test]
fn no_line_runs_away() {
    // Each of these is bounded: deep nesting, many braces, a long line of separators.
    let many = "(".repeat(100_000);
    assert!(parse(&many, Path::new("/w"), None).unreadable.is_some());
    let braces = format!("echo {}", "{a,b}".repeat(60));
    assert_eq!(runs(&braces), ["echo ? @/w"]);
    let roots = "a ".repeat(100);
    let exec = format!("find {roots} -exec rm {} \\;", "{} ".repeat(100));
    let parsed = parse(&exec, Path::new("/w"), None);
    let rm = parsed.invocations.iter().find(|i| i.program == Word::Lit("rm".into())).unwrap();
    assert_eq!(rm.args.len(), MAX_WORDS, "capped, the rest unknown");
    assert_eq!(rm.args.last(), Some(&Word::Unknown));
    let wrapped = format!("{}git push", "env ".repeat(MAX_PROGRAMS + 1));
    assert!(unreadable(&wrapped).contains("programs"));
    let evals = format!("{}true", "eval ".repeat(200));
    assert!(unreadable(&evals).contains("nested"));
    let started = std::time::Instant::now();
    let long = "true;".repeat(MAX_KEPT_WORDS);
    assert_eq!(parse(&long, Path::new("/w"), None).invocations.len(), MAX_KEPT_WORDS);
    let longer = "true;".repeat(MAX_LEN / 5);
    assert!(unreadable(&longer).contains("too large"));
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
}

#[test]
fn what_the_fuzzer_found_slow_is_read_in_bounded_time() {
    // `watch` and `eval` read their words, multiplied by braces, as scripts again, each level more.
    for input in [&include_bytes!("fuzzed/slow-watch-braces")[..], &include_bytes!("fuzzed/slow-watch-nul")[..]] {
        let line = String::from_utf8_lossy(&input[1..]);
        let started = std::time::Instant::now();
        let parsed = parse(&line, Path::new("/w"), Some(Path::new("/h")));
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(3), "{took:?}: {:?}", parsed.unreadable);
    }
    // Quoted braces live through one reading and expand at the next: 200 × 200 × 200 commands.
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let mut multiplied = "x".to_string();
    for _ in 0..3 {
        multiplied = format!("; eval {}{{1..200}}", quote(&multiplied));
    }
    let multiplied = format!("true {multiplied}");
    let started = std::time::Instant::now();
    assert!(unreadable(&multiplied).contains("too large"), "{multiplied}");
    assert!(started.elapsed() < std::time::Duration::from_secs(3), "{:?}", started.elapsed());
}

#[test]
fn braces_that_make_words_long_are_read_to_four_mebibytes_of_words_in_all() {
    // Each command is 4 KB of text whose braces make 256 words of 4 KB: 1 MB kept. Without a
    // bound on the bytes, 65,536 such words are 256 MB in the session's actor.
    let cwd = Path::new("/home/u/project");
    let command = format!("echo {}{{1..256}}; ", "a".repeat(4000));
    let within = parse(&command.repeat(4), cwd, None);
    assert_eq!(within.unreadable, None);
    assert_eq!(within.invocations.iter().map(|i| i.args.len()).sum::<usize>(), 4 * 256);
    let past = parse(&command.repeat(5), cwd, None);
    assert!(past.unreadable.is_some_and(|why| why.contains("4 MiB of words")), "fails closed");
}
