//! How money and sizes are written for people: one place, so the journal's text, the digest and
//! the CLI say "$0.0420" and "1.5 MB" the same way. A leaf: it uses nothing of the crate.

/// A size in bytes, as "512 B", "1.5 KB" or "3.2 MB".
pub fn bytes(n: u64) -> String {
    match n {
        n if n < 1024 => format!("{n} B"),
        n if n < 1024 * 1024 => format!("{:.1} KB", n as f64 / 1024.0),
        n => format!("{:.1} MB", n as f64 / (1024.0 * 1024.0)),
    }
}

/// Dollars: four decimals under ten cents (a cheap turn still shows), two above.
pub fn usd(cost: f64) -> String {
    if cost.abs() < 0.1 {
        format!("${cost:.4}")
    } else {
        format!("${cost:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_money_read_as_people_write_them() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KB");
        assert_eq!(bytes(3 * 1024 * 1024 + 200 * 1024), "3.2 MB");
        assert_eq!(usd(0.042), "$0.0420");
        assert_eq!(usd(1.5), "$1.50");
    }
}
