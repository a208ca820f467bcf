//! A terminal model per session: every byte the child writes goes through a vt100 parser, so at any
//! moment Nightshift can read what a person would see — the visible rows, the cursor, the colours and
//! the window title — instead of matching patterns in a raw byte stream.

use std::num::NonZeroU16;

use serde::{Deserialize, Serialize};

/// The size of a terminal in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PtySize {
    pub cols: u16,
    pub rows: u16,
}

impl PtySize {
    pub const fn new(cols: u16, rows: u16) -> Self {
        Self { cols, rows }
    }
}

impl Default for PtySize {
    fn default() -> Self {
        Self::new(120, 40)
    }
}

/// Rows of history kept above the visible screen: none. Nothing reads a live session's history
/// (a viewer is drawn the visible screen; a life's recording has all of it), and a thousand rows
/// of a wide terminal were megabytes a session by morning.
const SCROLLBACK: usize = 0;

/// What the child told the terminal that is not cell contents.
#[derive(Debug, Default)]
struct Signals {
    title: String,
    /// The last `ESC ] 7501;state=…` a client declared (Codex: `working`, `done`, `idle`).
    program_state: Option<String>,
    /// Inside a synchronized update (`CSI ? 2026 h` … `l`): the frame is half drawn.
    in_sync: bool,
}

impl vt100::Callbacks for Signals {
    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        self.title = String::from_utf8_lossy(title).into_owned();
    }

    fn unhandled_osc(&mut self, _: &mut vt100::Screen, params: &[&[u8]]) {
        if let [b"7501", rest @ ..] = params {
            for param in rest {
                let text = String::from_utf8_lossy(param);
                for field in text.split(':') {
                    if let Some(state) = field.strip_prefix("state=") {
                        self.program_state = Some(state.to_string());
                    }
                }
            }
        }
    }

    fn unhandled_csi(&mut self, _: &mut vt100::Screen, i1: Option<u8>, _: Option<u8>, params: &[&[u16]], c: char) {
        if i1 == Some(b'?') && params.iter().any(|p| *p == [2026]) {
            match c {
                'h' => self.in_sync = true,
                'l' => self.in_sync = false,
                _ => {}
            }
        }
    }
}

/// The terminal model of one session.
pub struct Screen {
    parser: vt100::Parser<Signals>,
}

impl std::fmt::Debug for Screen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (rows, cols) = self.parser.screen().size();
        f.debug_struct("Screen").field("rows", &rows).field("cols", &cols).finish_non_exhaustive()
    }
}

fn cells(n: u16) -> NonZeroU16 {
    NonZeroU16::new(n).unwrap_or(NonZeroU16::MIN)
}

/// The visible screen at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Each visible row as text, trailing blanks removed.
    pub rows: Vec<String>,
    /// Cursor row and column, zero-based.
    pub cursor: (u16, u16),
    pub cursor_visible: bool,
    /// The window title (OSC 0/2), empty when never set.
    pub title: String,
    pub size: (u16, u16),
    /// Whether the child switched to the alternate screen (full-screen TUIs do).
    pub alternate_screen: bool,
    /// The busy/idle state the client last declared itself (`ESC ] 7501;state=…`), if it does.
    pub program_state: Option<String>,
    /// Each visible row as runs of identically styled text (colours, bold, dim, …); empty unless
    /// asked for with [`Screen::styled_snapshot`].
    pub styled: Vec<Vec<Span>>,
}

/// Rows of a screen as text, each without its trailing blanks: a [`Snapshot`]'s, or a [`Frame`]'s
/// made only when read.
pub trait Rows {
    fn row_count(&self) -> usize;
    /// Row `i` (below [`Rows::row_count`]).
    fn row(&self, i: usize) -> &str;
}

impl Rows for [String] {
    fn row_count(&self) -> usize {
        <[String]>::len(self)
    }

    fn row(&self, i: usize) -> &str {
        &self[i]
    }
}

/// The visible screen now, for judging: a row's text is made the first time it is read. An
/// adapter reads a few rows at the bottom of a drawn screen, and making every row's text was most
/// of what judging a frame cost.
pub struct Frame<'a> {
    screen: &'a vt100::Screen,
    rows: Vec<std::cell::OnceCell<String>>,
    pub title: &'a str,
    pub program_state: Option<&'a str>,
}

impl std::fmt::Debug for Frame<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frame").field("rows", &self.rows.len()).field("title", &self.title).finish_non_exhaustive()
    }
}

impl Rows for Frame<'_> {
    fn row_count(&self) -> usize {
        self.rows.len()
    }

    fn row(&self, i: usize) -> &str {
        self.rows[i].get_or_init(|| row_text(self.screen, i as u16))
    }
}

/// A row's text as `vt100::Screen::rows` makes it (a wide character's second cell is skipped;
/// blanks before drawn text are spaces), without its trailing blanks. `cell` finds its row by
/// walking the scrollback first: cheap only because a live screen keeps none ([`SCROLLBACK`]).
fn row_text(screen: &vt100::Screen, row: u16) -> String {
    let cols = screen.size().1.get();
    let mut text = String::new();
    let mut pad = 0usize;
    let mut col = 0;
    while col < cols {
        let Some(cell) = screen.cell(row, col) else { break };
        let width: u16 = if cell.is_wide() { 2 } else { 1 };
        if cell.has_contents() {
            text.extend(std::iter::repeat_n(' ', pad));
            pad = 0;
            text.push_str(cell.contents());
        } else {
            pad += usize::from(width);
        }
        col += width;
    }
    text.truncate(text.trim_end().len());
    text
}

/// A run of cells in one row that share their look.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub text: String,
    #[serde(flatten)]
    pub style: Style,
}

/// How a cell looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Style {
    pub fg: Color,
    pub bg: Color,
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
    pub underline: bool,
    pub inverse: bool,
}

impl Style {
    fn of(cell: &vt100::Cell) -> Self {
        Self {
            fg: cell.fgcolor().into(),
            bg: cell.bgcolor().into(),
            bold: cell.bold(),
            dim: cell.dim(),
            italic: cell.italic(),
            underline: cell.underline(),
            inverse: cell.inverse(),
        }
    }
}

impl Snapshot {
    /// The last `n` rows that hold anything, in order (fewer when the screen has fewer).
    pub fn last_rows(&self, n: usize) -> &[String] {
        let end = self.rows.iter().rposition(|r| !r.is_empty()).map_or(0, |i| i + 1);
        &self.rows[end.saturating_sub(n)..end]
    }

    /// The visible text, one line per row, without the blank rows at the bottom.
    pub fn text(&self) -> String {
        let end = self.rows.iter().rposition(|r| !r.is_empty()).map_or(0, |i| i + 1);
        self.rows[..end].join("\n")
    }

    /// Rows `from..to` (clamped to the screen).
    pub fn region(&self, from: usize, to: usize) -> &[String] {
        let to = to.min(self.rows.len());
        &self.rows[from.min(to)..to]
    }
}

/// A colour as the child set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Color {
    #[default]
    Default,
    Indexed(u8),
    Rgb(u8, u8, u8),
}

impl From<vt100::Color> for Color {
    fn from(c: vt100::Color) -> Self {
        match c {
            vt100::Color::Default => Self::Default,
            vt100::Color::Idx(i) => Self::Indexed(i),
            vt100::Color::Rgb(r, g, b) => Self::Rgb(r, g, b),
        }
    }
}

/// One cell's content and look.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cell {
    pub text: String,
    #[serde(flatten)]
    pub style: Style,
}

impl Screen {
    pub fn new(size: PtySize) -> Self {
        Self {
            parser: vt100::Parser::new_with_callbacks(
                cells(size.rows),
                cells(size.cols),
                SCROLLBACK,
                Signals::default(),
            ),
        }
    }

    /// Feeds output from the child.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.parser.process(bytes);
    }

    pub fn resize(&mut self, size: PtySize) {
        self.parser.set_size(cells(size.rows), cells(size.cols));
    }

    pub fn size(&self) -> PtySize {
        let (rows, cols) = self.parser.screen().size();
        PtySize::new(cols.get(), rows.get())
    }

    pub fn title(&self) -> &str {
        &self.parser.callbacks().title
    }

    /// Whether the child is in the middle of a synchronized update: what is on screen now is half a
    /// frame and must not be judged.
    pub fn in_sync(&self) -> bool {
        self.parser.callbacks().in_sync
    }

    /// Escape codes that draw the screen as it is now on a terminal of its size: the alternate
    /// screen if the program is on it, the title, every cell with its colours, the cursor and the
    /// input modes (what an attached viewer is shown first).
    pub fn formatted(&self) -> Vec<u8> {
        let screen = self.parser.screen();
        let mut out = String::new();
        // The viewer may have been on the other screen when a fresh one is drawn (after a resize).
        out.push_str(if screen.alternate_screen() { "\x1b[?1049h" } else { "\x1b[?1049l" });
        out.push_str(&format!("\x1b]0;{}\x07", self.title()));
        out.push_str("\x1b[H\x1b[2J");
        out.push_str(&screen.state_formatted());
        out.into_bytes()
    }

    /// The visible screen now, as text (cheap enough for every frame).
    pub fn snapshot(&self) -> Snapshot {
        let screen = self.parser.screen();
        let (rows, cols) = screen.size();
        let rows_text = screen
            .rows(0, cols.get())
            .map(|mut r| {
                r.truncate(r.trim_end().len());
                r
            })
            .collect();
        Snapshot {
            styled: Vec::new(),
            rows: rows_text,
            cursor: screen.cursor_position(),
            cursor_visible: !screen.hide_cursor(),
            title: self.title().to_string(),
            size: (cols.get(), rows.get()),
            alternate_screen: screen.alternate_screen(),
            program_state: self.parser.callbacks().program_state.clone(),
        }
    }

    /// The visible screen for judging, each row's text made when it is read.
    pub fn frame(&self) -> Frame<'_> {
        let screen = self.parser.screen();
        let rows = screen.size().0.get();
        Frame {
            screen,
            rows: (0..rows).map(|_| std::cell::OnceCell::new()).collect(),
            title: self.title(),
            program_state: self.parser.callbacks().program_state.as_deref(),
        }
    }

    /// The visible screen with every row's colours and attributes as well.
    pub fn styled_snapshot(&self) -> Snapshot {
        let screen = self.parser.screen();
        let (rows, cols) = screen.size();
        Snapshot { styled: (0..rows.get()).map(|row| styled_row(screen, row, cols.get())).collect(), ..self.snapshot() }
    }

    /// One cell with its colours and attributes; `None` outside the screen.
    pub fn cell(&self, row: u16, col: u16) -> Option<Cell> {
        let cell = self.parser.screen().cell(row, col)?;
        Some(Cell { text: cell.contents().to_string(), style: Style::of(cell) })
    }

    /// The escape sequences that put a real terminal back the way a child found it, for the modes the
    /// child left switched on (alternate screen, hidden cursor, mouse reporting, bracketed paste).
    pub fn restore_sequence(&self) -> String {
        let screen = self.parser.screen();
        let mut out = String::new();
        if screen.mouse_protocol_mode() != vt100::MouseProtocolMode::None {
            out.push_str("\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l");
        }
        if screen.bracketed_paste() {
            out.push_str("\x1b[?2004l");
        }
        if screen.alternate_screen() {
            out.push_str("\x1b[?1049l");
        }
        if screen.hide_cursor() {
            out.push_str("\x1b[?25h");
        }
        out.push_str("\x1b[0m");
        out
    }
}

/// One row as styled runs, without the unstyled blanks at its end.
fn styled_row(screen: &vt100::Screen, row: u16, cols: u16) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    for col in 0..cols {
        let Some(cell) = screen.cell(row, col) else {
            break;
        };
        if cell.is_wide_continuation() {
            continue;
        }
        let style = Style::of(cell);
        let text = if cell.has_contents() { cell.contents() } else { " " };
        match spans.last_mut() {
            Some(last) if last.style == style => last.text.push_str(text),
            _ => spans.push(Span { text: text.to_string(), style }),
        }
    }
    if let Some(last) = spans.last_mut() {
        if last.style == Style::default() {
            last.text.truncate(last.text.trim_end_matches(' ').len());
        }
    }
    spans.retain(|s| !s.text.is_empty());
    spans
}

/// `text` made safe to print to a terminal: what an agent wrote may carry escape sequences (a
/// clipboard write, a title, a screen clear, a carriage return that hides what came before), and
/// none of them may act. Each control character but newline and tab (C0, DEL, and the C1 range,
/// 8-bit CSI and OSC among them) is shown as its escape (`\x1b`, `\u{9b}`), so the sequence it began
/// is left as plain text.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let control = |c: char| (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c);
    if !text.chars().any(control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !control(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_an_agent_wrote_prints_without_acting() {
        assert!(matches!(printable("plain text\n\tindented"), std::borrow::Cow::Borrowed(_)));
        let hostile = "done \u{1b}]52;c;cm0gLXJmIH4=\u{7} \u{1b}[2J\u{9b}31mred\rhidden\u{7f}";
        assert_eq!(printable(hostile), "done \\x1b]52;c;cm0gLXJmIH4=\\x07 \\x1b[2J\\u{9b}31mred\\x0dhidden\\x7f");
        assert_eq!(printable("café ✓"), "café ✓", "printable text is left as it is");
    }

    #[test]
    fn draws_text_cursor_moves_colours_and_title() {
        let mut s = Screen::new(PtySize::new(20, 5));
        s.feed(b"\x1b]0;\xe2\x9c\xb3 Claude Code\x07hello\r\n\x1b[31mred\x1b[0m");
        s.feed(b"\x1b[4;6HX\x1b[2mdim");
        assert!(s.snapshot().styled.is_empty());
        let snap = s.styled_snapshot();
        assert_eq!(snap.rows[0], "hello");
        assert_eq!(snap.rows[1], "red");
        assert_eq!(snap.rows[3], "     Xdim");
        assert_eq!(snap.cursor, (3, 9));
        assert_eq!(snap.title, "\u{2733} Claude Code");
        assert_eq!(s.cell(1, 0).unwrap().style.fg, Color::Indexed(1));
        assert_eq!(s.cell(0, 0).unwrap().style.fg, Color::Default);
        assert!(s.cell(3, 6).unwrap().style.dim);
        let red = &snap.styled[1];
        assert_eq!(red.len(), 1);
        assert_eq!((red[0].text.as_str(), red[0].style.fg), ("red", Color::Indexed(1)));
        let row3: Vec<(&str, bool)> = snap.styled[3].iter().map(|s| (s.text.as_str(), s.style.dim)).collect();
        assert_eq!(row3, [("     X", false), ("dim", true)]);
        assert_eq!(snap.last_rows(2), &["red".to_string(), String::new(), "     Xdim".to_string()][1..]);
        assert_eq!(snap.text(), "hello\nred\n\n     Xdim");
    }

    #[test]
    fn program_state_and_synchronized_updates_are_tracked() {
        let mut s = Screen::new(PtySize::new(20, 2));
        assert_eq!(s.snapshot().program_state, None);
        s.feed(b"\x1b]7501;state=working:app=codex\x1b\\");
        assert_eq!(s.snapshot().program_state.as_deref(), Some("working"));
        s.feed(b"\x1b[?2026hhalf");
        assert!(s.in_sync());
        s.feed(b" done\x1b[?2026l");
        assert!(!s.in_sync());
        assert_eq!(s.snapshot().rows[0], "half done");
    }

    #[test]
    fn utf8_split_across_chunks_is_joined() {
        let mut s = Screen::new(PtySize::new(20, 2));
        let bytes = "❯\u{a0}ok".as_bytes();
        s.feed(&bytes[..1]);
        s.feed(&bytes[1..]);
        assert_eq!(s.snapshot().rows[0], "❯\u{a0}ok");
    }

    #[test]
    fn restore_sequence_undoes_what_the_child_left_on() {
        let mut s = Screen::new(PtySize::new(20, 5));
        assert_eq!(s.restore_sequence(), "\x1b[0m");
        s.feed(b"\x1b[?1049h\x1b[?25l\x1b[?2004h\x1b[?1000h");
        let seq = s.restore_sequence();
        for part in ["\x1b[?1049l", "\x1b[?25h", "\x1b[?2004l", "\x1b[?1000l"] {
            assert!(seq.contains(part), "{seq:?} lacks {part:?}");
        }
    }

    /// Every capture of the real clients (their raw streams, fed in uneven chunks, and their drawn
    /// screens) reads the same row by row through a frame as through a snapshot, and every adapter
    /// judges the two alike.
    #[test]
    fn a_frame_reads_each_row_as_the_snapshot_does() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let mut files = Vec::new();
        let mut dirs = vec![root];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.file_name().is_some_and(|n| n == "pty.bin" || n.to_string_lossy().ends_with(".ansi.txt"))
                {
                    files.push(path);
                }
            }
        }
        assert!(files.len() > 20, "{files:?}");
        let adapters = crate::AgentKind::ALL.map(crate::agent::Adapter::builtin);
        let mut compared = 0;
        for path in &files {
            let bytes = std::fs::read(path).unwrap();
            for size in [PtySize::new(120, 40), PtySize::new(80, 24), PtySize::new(33, 7)] {
                let mut screen = Screen::new(size);
                for (i, chunk) in bytes.chunks(1 + bytes.len() / 7).enumerate() {
                    screen.feed(chunk);
                    let (snap, frame) = (screen.snapshot(), screen.frame());
                    // Read the frame from the bottom, as an adapter does, then the rest.
                    let from_frame: Vec<String> =
                        (0..frame.row_count()).rev().map(|r| frame.row(r).to_string()).rev().collect();
                    assert_eq!(from_frame, snap.rows, "{} at {size:?}, chunk {i}", path.display());
                    assert_eq!(
                        (frame.title, frame.program_state),
                        (snap.title.as_str(), snap.program_state.as_deref())
                    );
                    for adapter in &adapters {
                        let frame = screen.frame();
                        assert_eq!(adapter.classify_frame(&frame), adapter.classify(&snap), "{}", path.display());
                        assert_eq!(adapter.limit_region_of_frame(&frame), adapter.limit_region(&snap));
                    }
                    compared += 1;
                }
            }
        }
        assert!(compared > 100, "{compared}");
    }

    #[test]
    fn resize_changes_the_model() {
        let mut s = Screen::new(PtySize::new(80, 24));
        s.resize(PtySize::new(132, 50));
        assert_eq!(s.size(), PtySize::new(132, 50));
        assert_eq!(s.snapshot().size, (132, 50));
    }
}
