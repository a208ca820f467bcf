//! Attaching to a session over its control socket: after the `attach` request's answer line, both
//! sides send frames — a type byte, a 4-byte big-endian length, the payload.
//!
//! From the session: `o` output (the first one draws the whole screen), `e` the session ended (the
//! payload says how). From the viewer: `k` keys (as the user's terminal produced them; typing while
//! attached counts as the user typing), `r` a resize (`COLSxROWS`), `d` detach. A viewer that falls
//! behind is sent a fresh screen rather than a backlog: the session never waits for a viewer.

use std::io;

use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;

use super::Response;
use crate::pty::PtySize;
use crate::supervisor::Supervisor;

pub const OUTPUT: u8 = b'o';
pub const ENDED: u8 = b'e';
pub const KEYS: u8 = b'k';
pub const RESIZE: u8 = b'r';
pub const DETACH: u8 = b'd';
/// A frame's payload is at most this long (a viewer's frame bigger than it ends the attachment).
pub const MAX_FRAME: usize = 1 << 20;

/// One frame as bytes.
pub fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 5);
    out.push(kind);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// Reads one frame; `None` at the end of the stream.
pub async fn read_frame<R: AsyncReadExt + Unpin>(from: &mut R) -> io::Result<Option<(u8, Vec<u8>)>> {
    let mut head = [0u8; 5];
    match from.read_exact(&mut head).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a frame of {len} bytes is too long")));
    }
    let mut payload = vec![0u8; len];
    from.read_exact(&mut payload).await?;
    Ok(Some((head[0], payload)))
}

/// `COLSxROWS`.
pub fn parse_size(text: &str) -> Option<PtySize> {
    let (c, r) = text.split_once('x')?;
    let (cols, rows) = (c.trim().parse::<u16>().ok()?, r.trim().parse::<u16>().ok()?);
    (cols > 0 && rows > 0).then(|| PtySize::new(cols, rows))
}

async fn answer_line(write: &mut OwnedWriteHalf, response: &Response) -> io::Result<()> {
    let mut out = serde_json::to_vec(response).expect("responses serialise");
    out.push(b'\n');
    write.write_all(&out).await
}

/// Serves one attached viewer of `session` until it detaches or the session ends.
pub(super) async fn serve(
    reader: BufReader<OwnedReadHalf>,
    mut write: OwnedWriteHalf,
    supervisor: &Supervisor,
    session: &str,
    cols: u16,
    rows: u16,
) -> io::Result<()> {
    let Some(handle) = supervisor.session(session) else {
        let no = Response::error("no_session", format!("session {session} is not running in this Nightshift process"));
        return answer_line(&mut write, &no).await;
    };
    if handle.kind() == crate::store::SessionKind::Loop {
        let no = Response::error(
            "not_a_terminal",
            format!("session {session} is a loop: it has no terminal (`nightshift log {session}` shows what it did)"),
        );
        return answer_line(&mut write, &no).await;
    }
    if cols > 0 && rows > 0 {
        let _ = handle.resize(PtySize::new(cols, rows)).await;
    }
    let Ok(mut attached) = handle.attach().await else {
        return answer_line(&mut write, &Response::error("session_ended", format!("session {session} has ended")))
            .await;
    };
    answer_line(&mut write, &Response::ok()).await?;
    write.write_all(&frame(OUTPUT, &attached.screen)).await?;

    // The viewer's frames, read on their own (a read cut off mid-frame by a select would lose it).
    let (frames_tx, mut frames) = mpsc::channel::<(u8, Vec<u8>)>(64);
    let reading = tokio::spawn(async move {
        let mut reader = reader;
        while let Ok(Some(f)) = read_frame(&mut reader).await {
            if frames_tx.send(f).await.is_err() {
                break;
            }
        }
    });
    let result = async {
        loop {
            tokio::select! {
                chunk = attached.output.recv() => match chunk {
                    Some(bytes) => write.write_all(&frame(OUTPUT, &bytes)).await?,
                    // Fallen behind, or the session ended: a fresh screen, or the end.
                    None => match handle.attach().await {
                        Ok(again) => {
                            attached = again;
                            write.write_all(&frame(OUTPUT, &attached.screen)).await?;
                        }
                        Err(_) => {
                            let how = handle.status().exit.map_or_else(|| "the session ended".to_string(), |e| format!("the session ended: its agent {e}"));
                            write.write_all(&frame(ENDED, how.as_bytes())).await?;
                            return Ok(());
                        }
                    },
                },
                got = frames.recv() => match got {
                    Some((KEYS, bytes)) => {
                        let _ = handle.send_keys(bytes).await;
                    }
                    Some((RESIZE, size)) => {
                        if let Some(size) = parse_size(&String::from_utf8_lossy(&size)) {
                            let _ = handle.resize(size).await;
                        }
                    }
                    // Detached, gone, or a frame it should not send: the session goes on.
                    _ => return Ok(()),
                },
            }
        }
    }
    .await;
    reading.abort();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_and_an_oversized_one_is_refused() {
        let mut bytes = frame(KEYS, b"hello");
        bytes.extend(frame(RESIZE, b"120x40"));
        let mut from = &bytes[..];
        assert_eq!(read_frame(&mut from).await.unwrap(), Some((KEYS, b"hello".to_vec())));
        let (kind, size) = read_frame(&mut from).await.unwrap().unwrap();
        assert_eq!((kind, parse_size(&String::from_utf8(size).unwrap())), (RESIZE, Some(PtySize::new(120, 40))));
        assert_eq!(read_frame(&mut from).await.unwrap(), None);
        let mut huge = vec![KEYS];
        huge.extend_from_slice(&(MAX_FRAME as u32 + 1).to_be_bytes());
        assert!(read_frame(&mut &huge[..]).await.is_err());
        assert_eq!(parse_size("0x10"), None);
    }
}
