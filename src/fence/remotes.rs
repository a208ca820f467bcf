//! The repository's part of the fence: every remote's fetch and push hosts and every submodule's,
//! as git rewrites them, with a warning for what no HTTP proxy carries.

use std::ffi::OsStr;
use std::path::Path;
use std::time::Instant;

use super::hosts::{self, Place, Target};
use super::{Env, Fence, Why};

/// The session's variables that change what git reads: its config files and their rewrites.
const GIT_VARS: [&str; 6] =
    ["HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_COUNT"];

pub(super) fn read(dir: &Path, env: &Env, fence: &mut Fence) {
    let mut vars: Vec<(String, String)> =
        GIT_VARS.iter().filter_map(|name| Some((name.to_string(), env.get(name)?.to_string()))).collect();
    // `GIT_CONFIG_COUNT`'s pairs: `-c`-style settings the session carries.
    vars.extend(
        env.with_prefix("GIT_CONFIG_KEY_")
            .chain(env.with_prefix("GIT_CONFIG_VALUE_"))
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let pairs: Vec<(&str, &OsStr)> = vars.iter().map(|(k, v)| (k.as_str(), OsStr::new(v.as_str()))).collect();
    let until = Instant::now() + env.limit();
    match crate::git::remotes(dir, &pairs, until) {
        Ok(Some(repo)) => {
            for remote in &repo.remotes {
                let urls = remote.fetch.iter().map(|u| (u, false)).chain(remote.push.iter().map(|u| (u, true)));
                for (url, push) in urls {
                    let why = Why::Remote { name: remote.name.clone(), push };
                    // One warning for a remote, whether it fetches or pushes over what the proxy cannot carry.
                    allow(fence, url, why, &format!("the remote {}", remote.name));
                }
            }
            for sub in &repo.submodules {
                allow(
                    fence,
                    &sub.url,
                    Why::Submodule { path: sub.path.clone() },
                    &format!("the submodule {}", sub.path),
                );
            }
            for unread in &repo.unread {
                fence.warn(format!("git could not tell {unread}"));
            }
        }
        // Not a repository: nothing to fetch from or push to.
        Ok(None) => {}
        Err(said) => fence.warn(format!("git could not read the remotes of {}: {said}", dir.display())),
    }
}

/// Allows what `url` leads to, and says what the fence's proxy cannot carry.
fn allow(fence: &mut Fence, url: &str, why: Why, what: &str) {
    match hosts::git(url) {
        Target::Net(place) => {
            if let Some(warning) = needs(&place, what) {
                fence.warn(warning);
            }
            fence.allow(&place, why);
        }
        Target::Local => {}
        Target::Helper(helper) => fence.warn(format!(
            "{what} goes through git's remote helper `{helper}`, whose host cannot be told: allow it by hand if it needs the network"
        )),
        Target::Unreadable => fence.warn(format!("{what} has a URL no host can be read from; it is left out of the fence")),
    }
}

/// What a remote over something other than HTTP(S) needs beyond its host.
fn needs(place: &Place, what: &str) -> Option<String> {
    let at = place.shown();
    match place.scheme.as_str() {
        "git" => Some(format!(
            "{what} is reached over git:// ({at}), which no HTTP proxy carries: switch it to https, or let port {} through",
            place.port.unwrap_or_default()
        )),
        "ssh" => Some(format!(
            "{what} is reached over ssh ({at}): the sandbox must let port {} through and pass the ssh agent's socket \
             (SSH_AUTH_SOCK) and known_hosts, or the remote must be switched to https",
            place.port.unwrap_or_default()
        )),
        "http" | "https" => None,
        other => Some(format!("{what} is reached over {other} ({at}), which the fence's HTTP proxy does not carry")),
    }
}
