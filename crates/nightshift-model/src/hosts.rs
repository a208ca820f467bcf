//! What the fence lets through: hosts by name or address (any port, or one), and `*.domain`
//! patterns for every name below a domain. Pure: a host and a port in, yes or no out.

/// One allowed host, or a domain's subdomains.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// This host (a name or an address), on `port` or on any.
    Host { host: String, port: Option<u16> },
    /// Every name below this domain (`*.example.com`: `a.example.com`, not `example.com`).
    Below(String),
}

impl Pattern {
    /// `host`, `host:port`, `[::1]:8080`, `*.example.com` as the user writes them; `None` for
    /// what is none of these (a URL, spaces, an empty word).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if text.is_empty() || text.contains(['/', ' ', '@']) {
            return None;
        }
        if let Some(domain) = text.strip_prefix("*.") {
            let domain = normal(domain);
            return (!domain.is_empty() && !domain.contains('*')).then_some(Self::Below(domain));
        }
        if text.contains('*') {
            return None;
        }
        let (host, port) = split_port(text)?;
        let host = normal(host);
        (!host.is_empty()).then_some(Self::Host { host, port })
    }

    fn matches(&self, host: &str, port: u16) -> bool {
        match self {
            Self::Host { host: h, port: p } => h == host && p.is_none_or(|p| p == port),
            Self::Below(domain) => {
                host.len() > domain.len() + 1 && host.ends_with(domain.as_str()) && {
                    host.as_bytes()[host.len() - domain.len() - 1] == b'.'
                }
            }
        }
    }
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Host { host, port: None } => f.write_str(host),
            Self::Host { host, port: Some(port) } if host.contains(':') => write!(f, "[{host}]:{port}"),
            Self::Host { host, port: Some(port) } => write!(f, "{host}:{port}"),
            Self::Below(domain) => write!(f, "*.{domain}"),
        }
    }
}

/// `host:port` apart, IPv6 in brackets or bare; the port only where it is one.
fn split_port(text: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after.strip_prefix(':') {
            Some(port) => Some((host, Some(port.parse().ok()?))),
            None if after.is_empty() => Some((host, None)),
            None => None,
        };
    }
    match text.matches(':').count() {
        0 => Some((text, None)),
        1 => {
            let (host, port) = text.split_once(':')?;
            Some((host, Some(port.parse().ok()?)))
        }
        // A bare IPv6 address.
        _ => Some((text, None)),
    }
}

/// A host as compared: lowercase, no trailing dot, no brackets.
pub fn normal(host: &str) -> String {
    host.trim().trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_ascii_lowercase()
}

/// The fence: what it lets through, or everything (`open`: nothing is refused, all is seen).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    open: bool,
    patterns: Vec<Pattern>,
}

impl Policy {
    /// A fence that lets `patterns` through and refuses the rest.
    pub fn only(patterns: impl IntoIterator<Item = Pattern>) -> Self {
        let mut policy = Self::default();
        for pattern in patterns {
            policy.add(pattern);
        }
        policy
    }

    /// No fence: every host is let through (and still seen).
    pub fn open() -> Self {
        Self { open: true, patterns: Vec::new() }
    }

    pub fn add(&mut self, pattern: Pattern) {
        if !self.patterns.contains(&pattern) {
            self.patterns.push(pattern);
        }
    }

    pub fn is_open(&self) -> bool {
        self.open
    }

    pub fn patterns(&self) -> &[Pattern] {
        &self.patterns
    }

    /// Whether a command may reach `host` (as it named it) on `port`.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        if self.open {
            return true;
        }
        let host = normal(host);
        !host.is_empty() && self.patterns.iter().any(|p| p.matches(&host, port))
    }
}
