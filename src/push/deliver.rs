//! Delivery: a thread of its own that sends each message to ntfy and the webhook, retries, and
//! says what became of it, so a slow or dead server never holds up a session.

use std::fmt;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use super::message::actions_header;
use super::{read, Message, Secret, Shared, QUEUE, TIMEOUT};
use crate::notice::Kind;

/// Where messages go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Ntfy,
    Webhook,
}

impl Target {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ntfy => "ntfy",
            Self::Webhook => "webhook",
        }
    }
}

/// A header value as ntfy reads it: plain ASCII as is, anything else as an RFC 2047 encoded word.
fn header_value(text: &str) -> String {
    let flat: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if flat.is_ascii() {
        flat
    } else {
        use base64::Engine as _;
        format!("=?UTF-8?B?{}?=", base64::engine::general_purpose::STANDARD.encode(flat.as_bytes()))
    }
}

/// Sends one message to one target, once.
fn deliver(agent: &ureq::Agent, target: Target, url: &str, token: Option<&Secret>, m: &Message) -> Result<(), String> {
    let sent = match target {
        Target::Ntfy => {
            let mut request = agent
                .post(url)
                .header("Title", header_value(&m.title))
                .header("Priority", m.priority.ntfy())
                .header("Tags", m.tags.join(","));
            if let Some(click) = &m.click {
                request = request.header("Click", header_value(click));
            }
            if !m.buttons.is_empty() {
                request = request.header("Actions", header_value(&actions_header(&m.buttons)));
            }
            if let Some(token) = token {
                request = request.header("Authorization", token.bearer());
            }
            request.content_type("text/plain; charset=utf-8").send(m.body.as_bytes())
        }
        Target::Webhook => {
            let body = serde_json::to_vec(m).map_err(|e| e.to_string())?;
            agent.post(url).content_type("application/json").send(&body[..])
        }
    };
    match sent {
        Ok(_) => Ok(()),
        // The server's answer, never the URL (an ntfy topic is a secret of sorts).
        Err(ureq::Error::StatusCode(code)) => Err(format!("the server answered {code}")),
        Err(e) => Err(e.to_string()),
    }
}

/// A delivery that failed for good: journalled once per outage of the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub target: Target,
    pub session: Option<String>,
    pub reason: String,
}

/// What became of one message at one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    Sent {
        target: Target,
        session: Option<String>,
        kind: Kind,
    },
    /// Not delivered, retries included; `outage` when the target worked until now (said once,
    /// until it works again).
    NotSent {
        target: Target,
        session: Option<String>,
        kind: Kind,
        outage: Option<Failure>,
    },
}

enum Job {
    Send(Message),
    /// Answered once everything queued before it was tried.
    Flush(std_mpsc::Sender<()>),
}

/// The delivery thread's handle. Dropping every clone lets the thread finish what is queued and end.
#[derive(Debug, Clone)]
pub struct Pusher {
    queue: std_mpsc::SyncSender<Job>,
}

impl fmt::Debug for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Send(m) => f.debug_tuple("Send").field(&m.kind).finish(),
            Self::Flush(_) => f.write_str("Flush"),
        }
    }
}

impl Pusher {
    /// Starts the delivery thread. `told` hears what became of each message at each target, with
    /// each target that stopped working (once, until it works again). Each message goes to the
    /// targets set when it is delivered.
    pub(super) fn start(live: Shared, retry_after: Vec<Duration>, told: impl Fn(Report) + Send + 'static) -> Self {
        let (queue, jobs) = std_mpsc::sync_channel::<Job>(QUEUE);
        let run = move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .timeout_global(Some(TIMEOUT))
                .http_status_as_error(true)
                .user_agent(concat!("nightshift/", env!("CARGO_PKG_VERSION")))
                .build()
                .into();
            // Per target: whether its outage was journalled already.
            let mut down = [false; 2];
            for job in jobs {
                let m = match job {
                    Job::Send(m) => m,
                    Job::Flush(done) => {
                        let _ = done.send(());
                        continue;
                    }
                };
                let (targets, token) = {
                    let live = read(&live);
                    let live = &*live;
                    let urls =
                        [(Target::Ntfy, live.settings.ntfy.clone()), (Target::Webhook, live.settings.webhook.clone())];
                    (urls, live.token.clone())
                };
                for (i, (target, url)) in targets.iter().enumerate() {
                    let Some(url) = url else { continue };
                    let retries: &[Duration] = if down[i] { &[] } else { &retry_after };
                    let mut result = deliver(&agent, *target, url, token.as_ref(), &m);
                    for wait in retries {
                        if result.is_ok() {
                            break;
                        }
                        std::thread::sleep(*wait);
                        result = deliver(&agent, *target, url, token.as_ref(), &m);
                    }
                    let (target, session, kind) = (*target, m.session.clone(), m.kind);
                    match result {
                        Ok(()) => {
                            down[i] = false;
                            told(Report::Sent { target, session, kind });
                        }
                        Err(reason) if !down[i] => {
                            down[i] = true;
                            tracing::warn!(target = target.as_str(), "a push notification was not delivered: {reason}");
                            let outage = Some(Failure { target, session: session.clone(), reason });
                            told(Report::NotSent { target, session, kind, outage });
                        }
                        Err(reason) => {
                            tracing::debug!(target = target.as_str(), "still not delivered: {reason}");
                            told(Report::NotSent { target, session, kind, outage: None });
                        }
                    }
                }
            }
        };
        // No thread to spare (the user's process limit used up): the notices are lost, said once,
        // and the night goes on.
        if let Err(e) = std::thread::Builder::new().name("push".into()).spawn(run) {
            tracing::warn!("no thread for push notifications ({e}); none will be sent by this process");
        }
        Self { queue }
    }

    /// Queues `m`; never blocks (a full queue drops it).
    pub fn send(&self, m: Message) {
        if let Err(std_mpsc::TrySendError::Full(job)) = self.queue.try_send(Job::Send(m)) {
            tracing::warn!(?job, "a push notification was dropped: too many are waiting for delivery");
        }
    }

    /// Waits, at most `within`, until everything queued so far was tried. Blocking.
    pub fn flush(&self, within: Duration) -> bool {
        let (done, heard) = std_mpsc::channel();
        self.queue.send(Job::Flush(done)).is_ok() && heard.recv_timeout(within).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{message, Live, Settings};
    use super::*;
    use crate::notice::Notice;
    use std::sync::atomic::Ordering;
    use std::sync::{Arc, RwLock};

    fn notice(kind: Kind, body: &str) -> Notice {
        let session = Some("s1".into());
        Notice { kind, summary: "api · claude".into(), body: body.into(), session, once: None, approves: None }
    }

    /// A local HTTP server answering every request with the status in `status`, then closing.
    fn server(status: Arc<std::sync::atomic::AtomicU16>) -> String {
        use std::io::{BufRead as _, BufReader, Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let code = status.load(Ordering::SeqCst);
                let _ = write!(stream, "HTTP/1.1 {code} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            }
        });
        format!("http://{addr}/night")
    }

    #[test]
    fn each_message_is_reported_sent_or_not_and_an_outage_once() {
        let status = Arc::new(std::sync::atomic::AtomicU16::new(200));
        let settings = Settings { ntfy: Some(server(Arc::clone(&status))), ..Settings::default() };
        let live: Shared = Arc::new(RwLock::new(Live { settings: settings.clone(), ..Live::default() }));
        let (tx, rx) = std_mpsc::channel();
        let tx = std::sync::Mutex::new(tx);
        let pusher = Pusher::start(live, vec![Duration::from_millis(10)], move |r| {
            tx.lock().unwrap().send(r).unwrap();
        });
        let push = |kind: Kind| {
            pusher.send(message(&notice(kind, "x"), &settings));
            assert!(pusher.flush(Duration::from_secs(20)));
            rx.try_iter().collect::<Vec<Report>>()
        };
        let session = Some("s1".to_string());
        assert_eq!(
            push(Kind::Question),
            [Report::Sent { target: Target::Ntfy, session: session.clone(), kind: Kind::Question }]
        );
        status.store(503, Ordering::SeqCst);
        let first = push(Kind::Finished);
        let outage =
            Failure { target: Target::Ntfy, session: session.clone(), reason: "the server answered 503".into() };
        assert_eq!(
            first,
            [Report::NotSent {
                target: Target::Ntfy,
                session: session.clone(),
                kind: Kind::Finished,
                outage: Some(outage)
            }]
        );
        let again = push(Kind::Limit);
        assert_eq!(
            again,
            [Report::NotSent { target: Target::Ntfy, session: session.clone(), kind: Kind::Limit, outage: None }]
        );
        status.store(200, Ordering::SeqCst);
        assert_eq!(push(Kind::Resume), [Report::Sent { target: Target::Ntfy, session, kind: Kind::Resume }]);
    }

    #[test]
    fn headers_carry_utf8_as_encoded_words() {
        assert_eq!(header_value("plain"), "plain");
        assert_eq!(header_value("a\nb"), "a b");
        assert_eq!(header_value("api · claude"), "=?UTF-8?B?YXBpIMK3IGNsYXVkZQ==?=");
    }
}
