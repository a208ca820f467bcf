//! Attaching to a session over its control socket: after the `attach` request's answer line, both
//! sides send frames — a type byte, a 4-byte big-endian length, the payload.
//!
//! From the session: `s` the terminal's size (`COLSxROWS`, before every whole screen), `o` output
//! (the first after a size draws the whole screen), `e` the session ended (the payload says how).
//! From the viewer: `k` keys (as the user's terminal produced them; typing while attached counts as
//! the user typing), `r` a resize (`COLSxROWS`), `d` detach. A viewer that falls behind is sent a
//! fresh screen rather than a backlog, and so is every viewer after a resize: the session never
//! waits for a viewer.

use std::io;
use std::path::Path;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use super::{answer_line, read_answer, Code, ControlError, ErrorBody, Request, Response};
use crate::pty::PtySize;
use crate::supervisor::Supervisor;

pub const SIZE: u8 = b's';
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

async fn answer(write: &mut OwnedWriteHalf, answer: Result<Response, ErrorBody>) -> io::Result<()> {
    write.write_all(&answer_line(answer)).await
}

/// The size, then the whole screen drawn at it.
async fn write_screen(write: &mut OwnedWriteHalf, attached: &crate::session::Attached) -> io::Result<()> {
    let size = format!("{}x{}", attached.size.cols, attached.size.rows);
    let mut out = frame(SIZE, size.as_bytes());
    out.extend(frame(OUTPUT, &attached.screen));
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
        let no =
            ErrorBody::new(Code::NoSession, format!("session {session} is not running in this Nightshift process"));
        return answer(&mut write, Err(no)).await;
    };
    if handle.kind() == crate::store::SessionKind::Loop {
        let no = ErrorBody::new(
            Code::NotATerminal,
            format!("session {session} is a loop: it has no terminal (`nightshift log {session}` shows what it did)"),
        );
        return answer(&mut write, Err(no)).await;
    }
    if cols > 0 && rows > 0 {
        let _ = handle.resize(PtySize::new(cols, rows)).await;
    }
    let Ok(mut attached) = handle.attach().await else {
        return answer(&mut write, Err(ErrorBody::new(Code::SessionEnded, format!("session {session} has ended"))))
            .await;
    };
    answer(&mut write, Ok(Response::Done)).await?;
    write_screen(&mut write, &attached).await?;

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
                            write_screen(&mut write, &attached).await?;
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

/// What a viewer hears from the session.
#[derive(Debug, PartialEq, Eq)]
pub enum Heard {
    /// The terminal's size; a whole screen drawn at it follows.
    Size(PtySize),
    Output(Vec<u8>),
    /// The session ended; how, in words.
    Ended(String),
}

/// The viewer's side of an attachment: what the session sends ([`Viewer::next`]) and what the
/// viewer sends it ([`Viewer::keyboard`]), which can go to a task of its own.
#[derive(Debug)]
pub struct Viewer {
    reader: BufReader<OwnedReadHalf>,
    keyboard: Option<Keyboard>,
}

/// The viewer's keys, resizes and detach, to the session.
#[derive(Debug)]
pub struct Keyboard(OwnedWriteHalf);

impl Viewer {
    /// Attaches to `session` through the control socket at `socket`. With a `size`, the session's
    /// terminal takes it (the latest viewer's size wins); without, the viewer only watches it.
    pub async fn attach(socket: &Path, session: &str, size: Option<PtySize>) -> Result<Self, ControlError> {
        let unreachable = |source| ControlError::Unreachable { path: socket.to_path_buf(), source };
        let stream = UnixStream::connect(socket).await.map_err(unreachable)?;
        let (read, mut write) = stream.into_split();
        let (cols, rows) = size.map_or((0, 0), |s| (s.cols, s.rows));
        let request = Request::Attach { session: session.to_string(), cols, rows };
        let mut out = serde_json::to_vec(&request).expect("requests serialise");
        out.push(b'\n');
        write.write_all(&out).await.map_err(unreachable)?;
        let mut reader = BufReader::new(read);
        let mut line = String::new();
        let answered = tokio::time::timeout(super::CLIENT_TIMEOUT, reader.read_line(&mut line))
            .await
            .map_err(|_| ControlError::Timeout { path: socket.to_path_buf(), secs: super::CLIENT_TIMEOUT.as_secs() })?;
        answered.map_err(unreachable)?;
        read_answer(&request, &line, socket)?;
        Ok(Self { reader, keyboard: Some(Keyboard(write)) })
    }

    /// The keyboard, once (to move it to a task of its own).
    pub fn keyboard(&mut self) -> Option<Keyboard> {
        self.keyboard.take()
    }

    /// What the session sends next; `None` when the connection is gone.
    pub async fn next(&mut self) -> io::Result<Option<Heard>> {
        loop {
            let Some((kind, payload)) = read_frame(&mut self.reader).await? else { return Ok(None) };
            return Ok(Some(match kind {
                SIZE => match parse_size(&String::from_utf8_lossy(&payload)) {
                    Some(size) => Heard::Size(size),
                    None => continue,
                },
                OUTPUT => Heard::Output(payload),
                ENDED => Heard::Ended(String::from_utf8_lossy(&payload).into_owned()),
                // A kind a newer Nightshift sends: not for this viewer.
                _ => continue,
            }));
        }
    }
}

impl Keyboard {
    pub async fn keys(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.0.write_all(&frame(KEYS, bytes)).await
    }

    pub async fn resize(&mut self, size: PtySize) -> io::Result<()> {
        self.0.write_all(&frame(RESIZE, format!("{}x{}", size.cols, size.rows).as_bytes())).await
    }

    /// Leaves the session running.
    pub async fn detach(mut self) -> io::Result<()> {
        self.0.write_all(&frame(DETACH, b"")).await?;
        self.0.shutdown().await
    }
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
