//! SOCKS5 (RFC 1928), `CONNECT` only, no authentication: what `ALL_PROXY=socks5://…` clients and
//! the client's own ssh tunnel may use.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::{Passed, Refused, Report};

const VERSION: u8 = 5;

pub(super) async fn serve(
    mut client: TcpStream,
    allows: &(impl Fn(&str, u16) -> bool + Sync),
    reports: &mpsc::UnboundedSender<Report>,
) -> std::io::Result<()> {
    let (host, port) =
        tokio::time::timeout(super::HEAD_WITHIN, greet(&mut client)).await.map_err(super::timed_out)??;
    if !allows(&host, port) {
        // 0x02: connection not allowed by ruleset.
        client.write_all(&[VERSION, 0x02, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
        let _ = reports.send(Report::Refused(Refused { host, port }));
        return Ok(());
    }
    let mut upstream = match super::connect(&host, port).await {
        Ok(stream) => stream,
        Err(e) => {
            // 0x04: host unreachable; 0x05: refused.
            let code = if e.kind() == std::io::ErrorKind::ConnectionRefused { 0x05 } else { 0x04 };
            client.write_all(&[VERSION, code, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
            return Err(e);
        }
    };
    client.write_all(&[VERSION, 0, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
    let _ = reports.send(Report::Passed(Passed { host, port }));
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await.map(drop)
}

/// The greeting and the request: where the client goes.
async fn greet(client: &mut TcpStream) -> std::io::Result<(String, u16)> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let mut head = [0u8; 2];
    client.read_exact(&mut head).await?;
    if head[0] != VERSION {
        return Err(bad("not SOCKS5"));
    }
    let mut methods = vec![0u8; usize::from(head[1])];
    client.read_exact(&mut methods).await?;
    if !methods.contains(&0) {
        client.write_all(&[VERSION, 0xff]).await?;
        return Err(bad("no method without authentication offered"));
    }
    client.write_all(&[VERSION, 0]).await?;
    let mut request = [0u8; 4];
    client.read_exact(&mut request).await?;
    if request[0] != VERSION || request[1] != 1 {
        // 0x07: command not supported.
        client.write_all(&[VERSION, 0x07, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
        return Err(bad("only CONNECT is supported"));
    }
    let host = match request[3] {
        1 => {
            let mut a = [0u8; 4];
            client.read_exact(&mut a).await?;
            std::net::Ipv4Addr::from(a).to_string()
        }
        3 => {
            let mut len = [0u8; 1];
            client.read_exact(&mut len).await?;
            let mut name = vec![0u8; usize::from(len[0])];
            client.read_exact(&mut name).await?;
            String::from_utf8(name).map_err(|_| bad("a host name that is not text"))?
        }
        4 => {
            let mut a = [0u8; 16];
            client.read_exact(&mut a).await?;
            std::net::Ipv6Addr::from(a).to_string()
        }
        _ => return Err(bad("an unknown address type")),
    };
    let mut port = [0u8; 2];
    client.read_exact(&mut port).await?;
    Ok((host, u16::from_be_bytes(port)))
}
