//! What a process pushes with that is kept secret: the ntfy access token and the phone's signing
//! key, each in the desktop's keyring or a file only its owner may read, and the phone's topics as
//! `nightshift push setup` makes them.

use std::fmt;
use std::path::Path;

use serde::Serialize;

use crate::platform::{Found, Os, Secrets};

/// The access token's file, in the configuration directory.
pub const TOKEN_FILE: &str = "ntfy-token";

/// The ntfy access token's item in the desktop's keyring (see [`crate::platform::Secrets`]).
pub const KEYRING_ITEM: [(&str, &str); 2] = [("application", "nightshift"), ("service", "ntfy")];

/// Where the ntfy access token was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kept {
    Keyring,
    File,
}

/// The phone's signing key's file, in the configuration directory.
pub const PHONE_KEY_FILE: &str = "phone.key";
/// The phone's signing key's item in the desktop's keyring, looked for before the file.
pub const PHONE_KEY_ITEM: [(&str, &str); 2] = [("application", "nightshift"), ("service", "phone-key")];

/// The install's signing key for the phone's buttons: the keyring's item when it holds one, else
/// the file in `dir` (`None` with neither).
pub fn phone_key(dir: Option<&Path>) -> Result<Option<crate::phone::Key>, String> {
    let found = kept_secret(&PHONE_KEY_ITEM, dir, PHONE_KEY_FILE, "the phone's key")?;
    found.map(|(text, _)| crate::phone::Key::from_hex(&text)).transpose()
}

/// A secret the keyring's item `item` holds, else the 0600 file `file` in `dir`, and where it was
/// found; `what` names it in the log. A locked keyring item is said (once per call) and the file
/// is used.
fn kept_secret(
    item: &[(&str, &str)],
    dir: Option<&Path>,
    file: &str,
    what: &str,
) -> Result<Option<(String, Kept)>, String> {
    match <Os as Secrets>::lookup(item) {
        Ok(Found::Secret(text)) => return Ok(Some((text, Kept::Keyring))),
        Ok(Found::Locked) => {
            tracing::warn!("the keyring holds {what} but is locked; unlock it, or keep it in its file")
        }
        Ok(Found::Nothing) => {}
        Err(e) => tracing::warn!("{e}; {what} is looked for in its file"),
    }
    let Some(dir) = dir else { return Ok(None) };
    Ok(private_file(&dir.join(file))?.map(|text| (text, Kept::File)))
}

/// Keeps `key` in `dir`'s key file, readable by its owner alone, replacing any key before it.
pub fn save_phone_key(dir: &Path, key: &crate::phone::Key) -> Result<std::path::PathBuf, String> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(PHONE_KEY_FILE);
    let tmp = dir.join(".phone.key.tmp");
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let _ = std::fs::remove_file(&tmp);
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
        file.write_all(format!("{}\n", key.to_hex()).as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, &path)
    };
    write().map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// The phone's answers as `nightshift push setup` left them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Phone {
    /// The topic pushes go to: the one the phone subscribes to.
    pub publish: String,
    /// The topic the buttons post to (nobody subscribes to it but Nightshift).
    pub listen: String,
    /// Where the signing key is kept.
    pub key: Kept,
    /// Whether this call made them (false: they were set up already).
    pub made: bool,
}

/// Sets up the phone's answers in `dir`: a random topic pair on `server` (each 128 bits, so
/// neither can be guessed) and the install's signing key, unless they are set up already (`fresh`
/// makes new ones: the old buttons stop working). The key stays in the keyring when it holds one;
/// otherwise it is written to a 0600 file.
pub fn set_up_phone(dir: &Path, server: Option<&str>, fresh: bool) -> Result<Phone, String> {
    let mut config = crate::config::Config::load(Some(dir)).map_err(|e| e.to_string())?;
    // One look at the keyring (a D-Bus call): it decides where the key is kept.
    let key = if <Os as Secrets>::holds(&PHONE_KEY_ITEM) == Found::Nothing { Kept::File } else { Kept::Keyring };
    let kept = |made: bool, config: &crate::config::Config| -> Result<Phone, String> {
        let (Some(publish), Some(listen)) = (config.push.ntfy.clone(), config.push.listen.clone()) else {
            return Err("push.ntfy and push.listen are not both set; run `nightshift push setup --fresh`".into());
        };
        Ok(Phone { publish, listen, key, made })
    };
    if !fresh && config.push.listen.is_some() && phone_key(Some(dir))?.is_some() {
        let now = config.push.listen.as_deref().map(crate::notice::server).unwrap_or_default();
        if let Some(asked) = server.map(|s| s.trim_end_matches('/')).filter(|s| *s != now) {
            return Err(format!(
                "the phone's answers are set up on {now} already; add --fresh to move them to {asked} (the \
                 buttons pushed before stop working)"
            ));
        }
        return kept(false, &config);
    }
    let server = match server {
        Some(s) => s.trim_end_matches('/').to_string(),
        None => config.push.ntfy.as_deref().map_or("https://ntfy.sh", crate::notice::server).to_string(),
    };
    let topic = |server: &str| format!("{server}/ns-{:032x}", rand::random::<u128>());
    let (publish, listen) = (topic(&server), topic(&server));
    let mut settings = config.push.clone();
    settings.ntfy = Some(publish);
    settings.listen = Some(listen);
    if let Some(problem) = settings.problem() {
        return Err(format!("{problem} (the server given: `{server}`, such as https://ntfy.sh)"));
    }
    if fresh || key == Kept::File {
        if key == Kept::Keyring {
            return Err("the keyring holds the phone's key: remove it there first (`secret-tool clear application \
                        nightshift service phone-key`), then run `nightshift push setup --fresh` again"
                .into());
        }
        save_phone_key(dir, &crate::phone::Key::generate())?;
    }
    // Saved over what is there now: another process may have changed the file meanwhile.
    crate::config::Config::update(Some(dir), |now| {
        now.push = settings.clone();
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    config.push = settings;
    kept(true, &config)
}

/// `text` as a QR code drawn with half blocks, two rows per line, for a terminal (dark on light,
/// with the quiet zone phones need).
pub fn qr_text(text: &str) -> Result<String, String> {
    let code = qrcode::QrCode::new(text.as_bytes()).map_err(|e| e.to_string())?;
    Ok(code
        .render::<qrcode::render::unicode::Dense1x2>()
        .dark_color(qrcode::render::unicode::Dense1x2::Light)
        .light_color(qrcode::render::unicode::Dense1x2::Dark)
        .quiet_zone(true)
        .build())
}

/// `text` as a QR code in SVG, for the window.
pub fn qr_svg(text: &str) -> Result<String, String> {
    let code = qrcode::QrCode::new(text.as_bytes()).map_err(|e| e.to_string())?;
    Ok(code.render::<qrcode::render::svg::Color<'_>>().min_dimensions(200, 200).quiet_zone(true).build())
}

/// The ntfy access token: the desktop's keyring's item when it holds one, else the file in `dir`
/// (`None` with neither).
pub fn token(dir: Option<&Path>) -> Result<Option<Secret>, String> {
    Ok(find_token(dir)?.map(|(secret, _)| secret))
}

/// Where the token is kept, without reading it (for the window's settings).
pub fn token_kept(dir: Option<&Path>) -> Option<Kept> {
    if <Os as Secrets>::holds(&KEYRING_ITEM) != Found::Nothing {
        return Some(Kept::Keyring);
    }
    dir.is_some_and(|d| d.join(TOKEN_FILE).exists()).then_some(Kept::File)
}

/// The token and where it is kept. A locked keyring item is said (once per call, in the log) and
/// the file is used.
pub fn find_token(dir: Option<&Path>) -> Result<Option<(Secret, Kept)>, String> {
    Ok(kept_secret(&KEYRING_ITEM, dir, TOKEN_FILE, "the ntfy token")?.map(|(text, kept)| (Secret(text), kept)))
}

/// A secret kept in a file only its owner may read: its text, trimmed (`None` without the file).
fn private_file(path: &Path) -> Result<Option<String>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "{} may be read by others (mode {mode:o}); run `chmod 600 {}` and start again",
            path.display(),
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!("{} is empty; put the secret in it, or delete it", path.display()));
    }
    Ok(Some(token.to_string()))
}

/// A token: its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// The `Authorization` header's value.
    pub(crate) fn bearer(&self) -> String {
        format!("Bearer {}", self.0)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<hidden>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phone_key_is_kept_for_its_owner_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let key = crate::phone::Key::generate();
        let path = save_phone_key(dir.path(), &key).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(private_file(&path).unwrap().map(|t| crate::phone::Key::from_hex(&t)), Some(Ok(key)));
    }

    #[test]
    fn the_token_file_must_be_the_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(token(Some(dir.path())), Ok(None));
        let path = dir.path().join(TOKEN_FILE);
        std::fs::write(&path, "tk_secret\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = token(Some(dir.path())).unwrap_err();
        assert!(err.contains("mode 644") && err.contains("chmod 600"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let secret = token(Some(dir.path())).unwrap().unwrap();
        assert_eq!(secret, Secret::new("tk_secret"));
        assert!(!format!("{secret:?}").contains("tk_secret"));
    }
}
