//! HTTP proxying: `CONNECT host:port` opens a tunnel (TLS, and ssh through the client's
//! `GIT_SSH_COMMAND`), and an absolute-form request (`GET http://host/…`) is forwarded as the
//! origin's own request, one per connection. The head is read with hyper's own parser.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::{Passed, Refused, Report};

/// The longest request head taken.
const MAX_HEAD: usize = 64 << 10;

pub(super) async fn serve(
    mut client: TcpStream,
    allows: &(impl Fn(&str, u16) -> bool + Sync),
    reports: &mpsc::UnboundedSender<Report>,
) -> std::io::Result<()> {
    let (head, rest) =
        tokio::time::timeout(super::HEAD_WITHIN, read_head(&mut client)).await.map_err(super::timed_out)??;
    let Some(request) = Request::parse(&head) else {
        return answer(&mut client, "400 Bad Request", "Nightshift's fence takes CONNECT and absolute-form requests.")
            .await;
    };
    if !allows(&request.host, request.port) {
        let words = super::refusal_words(&request.host, request.port);
        let _ = reports.send(Report::Refused(Refused { host: request.host, port: request.port }));
        return answer(&mut client, "403 Forbidden", &words).await;
    }
    let mut upstream = match super::connect(&request.host, request.port).await {
        Ok(stream) => stream,
        Err(e) => {
            let words = format!("Nightshift's fence could not reach {}:{}: {e}", request.host, request.port);
            return answer(&mut client, "502 Bad Gateway", &words).await;
        }
    };
    let _ = reports.send(Report::Passed(Passed { host: request.host.clone(), port: request.port }));
    match &request.forward {
        None => client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await?,
        Some(origin) => upstream.write_all(origin).await?,
    }
    upstream.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await.map(drop)
}

/// Reads up to the end of the head; what came after it is the start of the body or the tunnel.
async fn read_head(client: &mut TcpStream) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "closed before its request"));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "a request head over 64 KiB"));
        }
    }
}

async fn answer(client: &mut TcpStream, status: &str, words: &str) -> std::io::Result<()> {
    let body = format!("{words}\n");
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    client.write_all(head.as_bytes()).await?;
    client.write_all(body.as_bytes()).await?;
    client.shutdown().await
}

/// Where a request goes, and for a plain HTTP one the head to send the origin.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Request {
    pub host: String,
    pub port: u16,
    /// `None` for a tunnel; else the origin-form head (one request, then the connection closes).
    pub forward: Option<Vec<u8>>,
}

impl Request {
    pub(super) fn parse(head: &[u8]) -> Option<Self> {
        let mut headers = [httparse::EMPTY_HEADER; 128];
        let mut req = httparse::Request::new(&mut headers);
        if !matches!(req.parse(head), Ok(httparse::Status::Complete(_))) {
            return None;
        }
        let (method, target) = (req.method?, req.path?);
        if method.eq_ignore_ascii_case("CONNECT") {
            let (host, port) = authority(target)?;
            return Some(Self { host, port: port?, forward: None });
        }
        let rest = target.strip_prefix("http://").or_else(|| target.strip_prefix("HTTP://"))?;
        let (auth, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = authority(auth)?;
        let mut origin = format!("{method} {path} HTTP/1.1\r\n").into_bytes();
        for h in req.headers.iter() {
            let name = h.name.to_ascii_lowercase();
            if matches!(name.as_str(), "proxy-connection" | "proxy-authorization" | "connection" | "keep-alive") {
                continue;
            }
            origin.extend_from_slice(h.name.as_bytes());
            origin.extend_from_slice(b": ");
            origin.extend_from_slice(h.value);
            origin.extend_from_slice(b"\r\n");
        }
        origin.extend_from_slice(b"Connection: close\r\n\r\n");
        Some(Self { host, port: port.unwrap_or(80), forward: Some(origin) })
    }
}

/// `host:port` of a request target: brackets for IPv6, no userinfo.
fn authority(text: &str) -> Option<(String, Option<u16>)> {
    let text = text.rsplit('@').next()?;
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    let host = nightshift_model::hosts::normal(host);
    (!host.is_empty()).then_some((host, port))
}
