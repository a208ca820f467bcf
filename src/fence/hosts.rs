//! Where a URL leads, and nothing else of it: the host (lowercase, an IPv6 literal without its
//! brackets) and the port, never the user or the password. Scheme URLs are read by the `url`
//! crate (the WHATWG parser npm's own URL class follows: IDNA, IPv6 forms, percent-encoding); git's
//! other spellings (`git@host:org/repo`, local paths, `helper::address`) as git reads them.

use std::net::Ipv6Addr;

/// A host a URL leads to. `port` is `None` for HTTP and HTTPS on their default port (a proxy
/// carries them by host); every other scheme names its port, its default one included (`ssh` 22,
/// `git` 9418), since it goes around the proxy and the port is what must be let through.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Place {
    pub host: String,
    pub port: Option<u16>,
    pub scheme: String,
}

impl Place {
    /// `host`, `host:port`, `[::1]:port`: for messages.
    pub fn shown(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        match self.port {
            Some(port) => format!("{host}:{port}"),
            None => host,
        }
    }

    /// Reached over plain HTTP(S), which a proxy carries.
    pub fn is_web(&self) -> bool {
        matches!(self.scheme.as_str(), "http" | "https")
    }
}

/// What a repository URL, as git reads it, leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A host on the network.
    Net(Place),
    /// A path on this machine (`/srv/repo.git`, `../other`, `file://…`): nothing to allow.
    Local,
    /// A remote helper git runs (`ext::…`, `hg::…`) whose address names no host this can read.
    Helper(String),
    /// Nothing git could reach either.
    Unreadable,
}

/// The schemes' prefixes tools put in front of a URL: cargo's `sparse+`/`registry+`, npm's and
/// pip's `git+`, pip's other VCS prefixes.
const PREFIXES: [&str; 6] = ["sparse+", "registry+", "git+", "hg+", "svn+", "bzr+"];

/// The host of a URL with a scheme (`https://u:p@Host:8443/x` → `host`, 8443), through any
/// of [`PREFIXES`]; `None` for a local one (`file:`) or text that is no URL.
pub(crate) fn web(text: &str) -> Option<Place> {
    let mut text = text.trim();
    for prefix in PREFIXES {
        if let Some(rest) = text.strip_prefix(prefix) {
            text = rest;
            break;
        }
    }
    let url = url::Url::parse(text).ok()?;
    let host = match url.host()? {
        url::Host::Domain(d) => d.trim_end_matches('.').to_ascii_lowercase(),
        url::Host::Ipv4(ip) => ip.to_string(),
        url::Host::Ipv6(ip) => ip.to_string(),
    };
    let scheme = url.scheme().to_ascii_lowercase();
    if scheme == "file" || !sane(&host) {
        return None;
    }
    let port = match scheme.as_str() {
        "http" | "https" => url.port(),
        "ssh" | "git+ssh" | "ssh+git" => Some(url.port().unwrap_or(22)),
        "git" => Some(url.port().unwrap_or(9418)),
        _ => url.port_or_known_default(),
    };
    let scheme = if scheme.contains("ssh") { "ssh".to_string() } else { scheme };
    Some(Place { scheme, host, port })
}

/// What a repository URL leads to, read as git reads it (`transport.c`, `connect.c`).
pub(crate) fn git(text: &str) -> Target {
    let text = text.trim();
    if text.is_empty() || text.starts_with('-') {
        return Target::Unreadable;
    }
    // `<transport>::<address>`: a remote helper.
    if let Some((helper, address)) = text.split_once("::") {
        if !helper.is_empty() && helper.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
            return match web(address) {
                Some(place) => Target::Net(place),
                None => Target::Helper(helper.to_string()),
            };
        }
    }
    if let Some(colon) = text.find("://") {
        let scheme = &text[..colon];
        if scheme.eq_ignore_ascii_case("file") {
            return Target::Local;
        }
        return web(text).map_or(Target::Unreadable, Target::Net);
    }
    scp_like(text).unwrap_or(Target::Local)
}

/// `[user@]host:path` and `[user@][host]:path`; `None` where git would take the text for a path
/// (no colon, or a slash before the first one).
fn scp_like(text: &str) -> Option<Target> {
    let after_user = text.find('@').filter(|&at| !text[..at].contains('/') && !text[..at].contains(':'));
    let rest = after_user.map_or(text, |at| &text[at + 1..]);
    let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
        // `[::1]:repo`, or the old `[host:2222]:repo`.
        let close = inner.find(']')?;
        inner[close + 1..].strip_prefix(':')?;
        let inside = &inner[..close];
        match inside.parse::<Ipv6Addr>() {
            Ok(ip) => (ip.to_string(), 22),
            Err(_) => match inside.rsplit_once(':') {
                Some((host, port)) => (host.to_ascii_lowercase(), port.parse().ok()?),
                None => (inside.to_ascii_lowercase(), 22),
            },
        }
    } else {
        let colon = rest.find(':')?;
        if rest[..colon].contains('/') || text[..text.len() - rest.len()].contains('/') {
            return None;
        }
        (rest[..colon].to_ascii_lowercase(), 22)
    };
    if !sane(&host) {
        return Some(Target::Unreadable);
    }
    Some(Target::Net(Place { scheme: "ssh".into(), host, port: Some(port) }))
}

/// A host name or address a fence can hold: nothing a proxy or a sandbox's list would misread.
fn sane(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.chars().all(|c| c.is_ascii_alphanumeric() || "-._:".contains(c))
        && !host.starts_with(['-', '.'])
}

/// `text` with the user and password taken out of every URL in it (a tool's message can quote a
/// URL with a token).
pub(crate) fn redact(text: &str) -> String {
    static USERINFO: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"([A-Za-z][A-Za-z0-9+.\-]*://)[^/\s@]*@").expect("a valid pattern")
    });
    USERINFO.replace_all(text, "$1").into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(scheme: &str, host: &str, port: Option<u16>) -> Target {
        Target::Net(Place { scheme: scheme.into(), host: host.into(), port })
    }

    #[test]
    fn every_way_git_spells_a_remote() {
        let cases = [
            ("https://user:t0ken@Git.Example.COM/org/repo.git", net("https", "git.example.com", None)),
            ("https://git.example.com:8443/org/repo.git", net("https", "git.example.com", Some(8443))),
            ("http://git.example.com:80/repo", net("http", "git.example.com", None)),
            ("ssh://git@host.example:2222/org/repo", net("ssh", "host.example", Some(2222))),
            ("ssh://host.example/org/repo", net("ssh", "host.example", Some(22))),
            ("git+ssh://git@host.example/repo", net("ssh", "host.example", Some(22))),
            ("git@Host.Example:org/repo.git", net("ssh", "host.example", Some(22))),
            ("host.example:repo", net("ssh", "host.example", Some(22))),
            ("git@[::1]:repo", net("ssh", "::1", Some(22))),
            ("[git.example:2200]:repo", net("ssh", "git.example", Some(2200))),
            ("git://git.example/repo", net("git", "git.example", Some(9418))),
            ("git://git.example:9000/repo", net("git", "git.example", Some(9000))),
            ("http://[::1]:8080/repo", net("http", "::1", Some(8080))),
            ("http://[0:0:0:0:0:0:0:1]/repo", net("http", "::1", None)),
            ("https://10.0.0.7/repo", net("https", "10.0.0.7", None)),
            ("persistent-https::https://host.example/repo", net("https", "host.example", None)),
            ("file:///srv/repo.git", Target::Local),
            ("/srv/repo.git", Target::Local),
            ("../sibling", Target::Local),
            ("./a:b", Target::Local),
            ("dir/with:colon", Target::Local),
            ("ext::ssh -i key host.example %S repo", Target::Helper("ext".into())),
            ("https://exa mple/repo", Target::Unreadable),
            ("-uupload-pack=touch:x", Target::Unreadable),
            ("ev!l@ho$t:repo", Target::Unreadable),
        ];
        for (url, want) in cases {
            assert_eq!(git(url), want, "{url}");
        }
    }

    #[test]
    fn registry_urls_and_their_prefixes() {
        let place = |s: &str, h: &str, p| Some(Place { scheme: s.into(), host: h.into(), port: p });
        assert_eq!(web("sparse+https://Index.Example/"), place("https", "index.example", None));
        assert_eq!(web("registry+https://git.example/index"), place("https", "git.example", None));
        assert_eq!(web("git+https://tok@git.example/x.git#abc"), place("https", "git.example", None));
        assert_eq!(web("https://192.168.1.9:4873/"), place("https", "192.168.1.9", Some(4873)));
        assert_eq!(web("https://[fe80::1%25eth0]/"), None, "a zone in an address is not for a fence");
        assert_eq!(web("https://xn--bcher-kva.example/"), place("https", "xn--bcher-kva.example", None));
        assert_eq!(
            web("https://bücher.example/"),
            place("https", "xn--bcher-kva.example", None),
            "as the wire names it"
        );
        assert_eq!(web("file:///srv/wheels"), None);
        assert_eq!(web("/srv/wheels"), None);
        assert_eq!(web("not a url"), None);
        assert_eq!(web("https://host.example./simple").unwrap().host, "host.example");
    }

    #[test]
    fn credentials_are_taken_out_of_any_text() {
        let said = "fatal: unable to access 'https://me:ghp_s3cret@git.example/x/': 403; also git+ssh://tok@h/x";
        let shown = redact(said);
        assert!(!shown.contains("s3cret") && !shown.contains("tok@"), "{shown}");
        assert!(shown.contains("https://git.example/x/") && shown.contains("git+ssh://h/x"), "{shown}");
    }

    #[test]
    fn a_place_is_shown_as_a_proxy_would_name_it() {
        assert_eq!(Place { scheme: "http".into(), host: "::1".into(), port: Some(8080) }.shown(), "[::1]:8080");
        assert_eq!(Place { scheme: "https".into(), host: "a.example".into(), port: None }.shown(), "a.example");
    }
}
