use super::*;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[test]
fn hosts_and_patterns_as_the_user_writes_them() {
    let p = |t: &str| Pattern::parse(t);
    assert_eq!(p("Registry.NPMJS.org."), Some(Pattern::Host { host: "registry.npmjs.org".into(), port: None }));
    assert_eq!(p("127.0.0.2:8080"), Some(Pattern::Host { host: "127.0.0.2".into(), port: Some(8080) }));
    assert_eq!(p("[::1]:8080"), Some(Pattern::Host { host: "::1".into(), port: Some(8080) }));
    assert_eq!(p("::1"), Some(Pattern::Host { host: "::1".into(), port: None }));
    assert_eq!(p("*.example.com"), Some(Pattern::Below("example.com".into())));
    for bad in ["", "https://x.org/", "a b", "*", "a*.b", "user@host", "host:port", "*.*.x"] {
        assert_eq!(p(bad), None, "{bad:?}");
    }
    assert_eq!(p("[::1]:8080").unwrap().to_string(), "[::1]:8080");

    let fence = Policy::only(["crates.io", "*.example.com", "127.0.0.2:9000"].map(|t| Pattern::parse(t).unwrap()));
    assert!(fence.allows("crates.io", 443) && fence.allows("CRATES.IO.", 80));
    assert!(fence.allows("a.example.com", 443) && fence.allows("a.b.example.com", 22));
    assert!(!fence.allows("example.com", 443), "a domain's pattern is for the names below it");
    assert!(!fence.allows("badexample.com", 443) && !fence.allows("example.com.evil.org", 443));
    assert!(fence.allows("127.0.0.2", 9000) && !fence.allows("127.0.0.2", 9001));
    assert!(!fence.allows("", 443) && !fence.allows("crates.io.evil.org", 443));
    assert!(Policy::open().allows("anything.at.all", 1));
    // A long list stays a list: ten thousand hosts, any asked quickly.
    let many = Policy::only((0..10_000).map(|i| Pattern::Host { host: format!("h{i}.example.org"), port: None }));
    assert!(many.allows("h9999.example.org", 443) && !many.allows("h10000.example.org", 443));
}

#[test]
fn a_request_head_says_where_it_goes() {
    let r = |t: &str| http::Request::parse(t.as_bytes());
    let tunnel = r("CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\n\r\n").unwrap();
    assert_eq!((tunnel.host.as_str(), tunnel.port, tunnel.forward), ("github.com", 443, None));
    let plain = r(
        "GET http://127.0.0.3:8080/pkg/a?x=1 HTTP/1.1\r\nHost: 127.0.0.3:8080\r\nProxy-Connection: keep-alive\r\n\r\n",
    )
    .unwrap();
    assert_eq!((plain.host.as_str(), plain.port), ("127.0.0.3", 8080));
    let origin = String::from_utf8(plain.forward.unwrap()).unwrap();
    assert!(
        origin.starts_with("GET /pkg/a?x=1 HTTP/1.1\r\n") && origin.ends_with("Connection: close\r\n\r\n"),
        "{origin}"
    );
    assert!(!origin.to_ascii_lowercase().contains("proxy-connection"), "{origin}");
    assert_eq!(r("GET http://[::1]/ HTTP/1.1\r\n\r\n").unwrap().host, "::1");
    assert_eq!(r("GET http://user:secret@x.org/ HTTP/1.1\r\n\r\n").unwrap().host, "x.org", "no userinfo");
    for bad in ["GET /local HTTP/1.1\r\n\r\n", "CONNECT github.com HTTP/1.1\r\n\r\n", "nonsense\r\n\r\n"] {
        assert_eq!(r(bad), None, "{bad:?}");
    }
}

/// A server on `ip` that answers each connection with `tag` and what it read of the first line.
async fn upstream(ip: &str, tag: &'static str) -> u16 {
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let first = String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or_default().to_string();
                let _ = s.write_all(format!("{tag}: {first}\n").as_bytes()).await;
            });
        }
    });
    port
}

async fn read_all(mut s: tokio::net::TcpStream) -> String {
    let mut out = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut out)).await;
    out
}

#[tokio::test]
async fn the_fence_lets_its_hosts_through_and_refuses_the_rest_saying_which() {
    let (allowed, stranger) = (upstream("127.0.0.2", "index").await, upstream("127.0.0.4", "stranger").await);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let proxy = Proxy::start(Policy::only([Pattern::parse("127.0.0.2").unwrap()]), tx).await.unwrap();
    let dial = || tokio::net::TcpStream::connect(("127.0.0.1", proxy.http_port));

    // A tunnel to an allowed host.
    let mut s = dial().await.unwrap();
    s.write_all(format!("CONNECT 127.0.0.2:{allowed} HTTP/1.1\r\n\r\nhello through\n").as_bytes()).await.unwrap();
    let got = read_all(s).await;
    assert!(got.starts_with("HTTP/1.1 200") && got.contains("index: hello through"), "{got}");
    // A plain request, forwarded in its origin form.
    let mut s = dial().await.unwrap();
    s.write_all(format!("GET http://127.0.0.2:{allowed}/pkg HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).await.unwrap();
    assert_eq!(read_all(s).await, "index: GET /pkg HTTP/1.1\n");
    // The stranger: refused with words the agent reads, and reported.
    let mut s = dial().await.unwrap();
    s.write_all(format!("CONNECT 127.0.0.4:{stranger} HTTP/1.1\r\n\r\n").as_bytes()).await.unwrap();
    let got = read_all(s).await;
    assert!(got.starts_with("HTTP/1.1 403") && got.contains("fence refused 127.0.0.4"), "{got}");
    // SOCKS5, by address: allowed, then refused.
    for (ip, port, ok) in [([127, 0, 0, 2], allowed, true), ([127, 0, 0, 4], stranger, false)] {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", proxy.socks_port)).await.unwrap();
        s.write_all(&[5, 1, 0]).await.unwrap();
        let mut reply = [0u8; 2];
        s.read_exact(&mut reply).await.unwrap();
        assert_eq!(reply, [5, 0]);
        let mut req = vec![5, 1, 0, 1];
        req.extend(ip);
        req.extend(port.to_be_bytes());
        s.write_all(&req).await.unwrap();
        let mut answer = [0u8; 10];
        s.read_exact(&mut answer).await.unwrap();
        assert_eq!(answer[1] == 0, ok, "{answer:?}");
        if ok {
            s.write_all(b"by socks\n").await.unwrap();
            assert_eq!(read_all(s).await, "index: by socks\n");
        }
    }
    let mut reports = Vec::new();
    while let Ok(r) = rx.try_recv() {
        reports.push(r);
    }
    let refused: Vec<&Report> = reports.iter().filter(|r| matches!(r, Report::Refused(_))).collect();
    assert_eq!(refused, [&Report::Refused(Refused { host: "127.0.0.4".into(), port: stranger }); 2]);
    assert_eq!(reports.len(), 5, "{reports:?}");

    // Allowed for the rest of the night: the next connection goes through.
    proxy.allow(Pattern::parse("127.0.0.4").unwrap());
    let mut s = dial().await.unwrap();
    s.write_all(format!("CONNECT 127.0.0.4:{stranger} HTTP/1.1\r\n\r\nnow\n").as_bytes()).await.unwrap();
    assert!(read_all(s).await.contains("stranger: now"));
}
