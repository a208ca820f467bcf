//! A Bash command line as the guard reads it: the shell parser (every program the line runs, and
//! where) and the rules over what it found, from a few places, on a few branches. The first byte
//! picks where the agent's shell is, the branch checked out, whether `$HOME` is known, and whether
//! the parser's own promises are checked too (a quarter of the inputs: the rules read each line
//! twice already).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nightshift::hooks::{guard, shell};
use std::path::Path;
use std::sync::OnceLock;

fn rules() -> &'static guard::Rules {
    static RULES: OnceLock<guard::Rules> = OnceLock::new();
    RULES.get_or_init(guard::Rules::builtin)
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let command = String::from_utf8_lossy(rest);
    let cwd = ["/home/u/project", "/home/u/project/sub", "/", "/home/u"][usize::from(pick & 3)];
    let branch = if pick & 4 == 0 { "main" } else { "feature" };
    let home = (pick & 8 == 0).then_some(Path::new("/home/u"));
    let parsed = (pick & 0x30 == 0).then(|| shell::parse(&command, Path::new(cwd), home));
    // Every program runs somewhere, and where it is known, that is an absolute directory.
    for inv in parsed.iter().flat_map(|p| &p.invocations) {
        assert!(!inv.dirs.is_empty());
        assert!(inv.dirs.iter().flatten().all(|d| d.is_absolute()), "{inv:?}");
    }
    let mut facts = guard::Facts {
        cwd: cwd.into(),
        tree: "/home/u/project".into(),
        home: home.map(Path::to_path_buf),
        ..guard::Facts::default()
    };
    let needed = rules().repos_needed(&command, &facts.cwd, facts.home.as_deref());
    assert!(needed.len() <= guard::MAX_REPOS);
    for dir in needed {
        facts = facts.with_repo(&dir, (Some(branch.into()), Some("main".into())));
    }
    let denial = rules().check(&command, &facts);
    if let Some(d) = &denial {
        assert!(!d.kind.is_empty() && d.reason.contains("Nightshift's guard"), "{d:?}");
    }
    // What cannot be read is refused.
    if let Some(why) = parsed.and_then(|p| p.unreadable) {
        assert!(denial.is_some(), "unreadable ({why}) yet let through");
    }
});
