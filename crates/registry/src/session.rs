//! A session log indexed by byte offset, for a viewer of a large or live
//! session: where each outer call's events are in the file, so that a page
//! of cards reads only its own events again, and the lines appended since
//! the last look are all that a refresh reads.
//!
//! The index holds a few numbers and the id for each outer call, not the
//! events: a log of a million events costs tens of megabytes of index,
//! whatever its results hold. A line still being written (no newline yet)
//! waits for the next refresh; a complete line that is not an event is
//! counted, never hidden and never fatal.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::card::{cards, Card};
use crate::events::{check_header, BadLine, Event, LogError};

/// Where one event's line is in the file.
#[derive(Clone, Copy, Debug)]
struct Span {
    at: u64,
    len: u64,
}

/// The lines of one outer call's card: its call, its result, its nested
/// dispatches' events and the turn that bounded it.
#[derive(Debug)]
struct Call {
    call: Span,
    result: Option<Span>,
    dispatches: Vec<Span>,
    turn: Option<Span>,
}

/// Whose log it is: spillway's own, or DeepSeek Harness's (read through
/// [`crate::dsh`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Dialect {
    /// `{"format":"spillway-session",…}` and this crate's events.
    Spillway,
    /// `{"type":"session",…}` and DeepSeek Harness's event envelope.
    DeepSeekHarness,
}

/// The longest line read as an event: past it a line is counted as bad
/// without being held (a file that is not a log could be one endless
/// line). Far more than a result can hold, escaped.
const MAX_LINE: u64 = 512 << 20;

/// How many bad lines are kept with their reasons; the rest are counted.
const KEEP_BAD: usize = 100;

/// A session log's index. See the module documentation.
#[derive(Debug)]
pub struct SessionIndex {
    path: PathBuf,
    /// Bytes read and indexed: up to the end of the last complete line.
    indexed: u64,
    /// Complete lines indexed, the header included.
    lines: u64,
    calls: Vec<Call>,
    by_id: HashMap<String, usize>,
    bad: Vec<BadLine>,
    bad_count: u64,
    /// [`MAX_LINE`], smaller in tests.
    max_line: u64,
    dialect: Dialect,
    /// The file indexed (device and inode), so that a log replaced at its
    /// path (rotated, rewritten) is never read with this index's offsets.
    identity: (u64, u64),
}

/// What a [`SessionIndex::refresh`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refreshed {
    /// New events indexed.
    pub events: u64,
    /// The positions of the cards that are new or changed (a result or a
    /// dispatch arrived), in order.
    pub cards: Vec<usize>,
    /// Whether it stopped at its byte limit with more lines to read.
    pub more: bool,
}

fn io_error<'p>(op: &'static str, path: &'p Path) -> impl FnOnce(io::Error) -> LogError + 'p {
    move |source| LogError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// A file's device and inode.
fn identity(file: &File, path: &Path) -> Result<(u64, u64), LogError> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata().map_err(io_error("inspect", path))?;
    Ok((meta.dev(), meta.ino()))
}

impl SessionIndex {
    /// Indexes the session log at `path`.
    ///
    /// # Errors
    ///
    /// [`LogError`] when the file cannot be read or its first line is not a
    /// session log's header.
    pub fn open(path: impl AsRef<Path>) -> Result<SessionIndex, LogError> {
        Self::open_up_to(path, u64::MAX).map(|(index, _)| index)
    }

    /// [`open`](SessionIndex::open), indexing about `max_bytes` of the log
    /// (its header at least): the rest is indexed by
    /// [`refresh_up_to`](SessionIndex::refresh_up_to), a step at a time.
    ///
    /// # Errors
    ///
    /// As [`open`](SessionIndex::open).
    pub fn open_up_to(
        path: impl AsRef<Path>,
        max_bytes: u64,
    ) -> Result<(SessionIndex, Refreshed), LogError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(io_error("open", path))?;
        let mut index = SessionIndex {
            identity: identity(&file, path)?,
            path: path.to_path_buf(),
            indexed: 0,
            lines: 0,
            calls: Vec::new(),
            by_id: HashMap::new(),
            bad: Vec::new(),
            bad_count: 0,
            max_line: MAX_LINE,
            dialect: Dialect::Spillway,
        };
        let first = index.refresh_up_to(max_bytes.max(1))?;
        Ok((index, first))
    }

    /// Indexes the complete lines appended since the last look.
    ///
    /// # Errors
    ///
    /// [`LogError`] when the file cannot be read, or when it is shorter
    /// than what was indexed (it was replaced or cut: open it again).
    pub fn refresh(&mut self) -> Result<Refreshed, LogError> {
        self.refresh_up_to(u64::MAX)
    }

    /// [`refresh`](SessionIndex::refresh), stopping at the first whole
    /// line past about `max_bytes` read (1 MiB reads), so that a caller
    /// indexing a large log can answer between steps: [`Refreshed::more`]
    /// says whether it stopped early.
    ///
    /// # Errors
    ///
    /// As [`refresh`](SessionIndex::refresh).
    pub fn refresh_up_to(&mut self, max_bytes: u64) -> Result<Refreshed, LogError> {
        let path = self.path.clone();
        let mut file = self.file()?;
        let len = file.metadata().map_err(io_error("inspect", &path))?.len();
        if len < self.indexed {
            return Err(LogError::Io {
                op: "follow",
                path,
                source: io::Error::other("the log is shorter than what was indexed"),
            });
        }
        file.seek(SeekFrom::Start(self.indexed))
            .map_err(io_error("read", &path))?;
        let mut out = Refreshed::default();
        let mut changed = Vec::new();
        let mut pending = Vec::new();
        // The length of the line being read, and whether it outgrew what
        // an event can be (its bytes are then dropped, not held).
        let (mut line_len, mut overlong) = (0u64, false);
        let mut buf = vec![0u8; 1 << 20];
        let mut at = self.indexed;
        let from = at;
        loop {
            if at - from >= max_bytes {
                out.more = at < len;
                break;
            }
            let n = file.read(&mut buf).map_err(io_error("read", &path))?;
            if n == 0 {
                break;
            }
            let mut chunk = &buf[..n];
            loop {
                let end = memchr::memchr(b'\n', chunk);
                let part = &chunk[..end.unwrap_or(chunk.len())];
                line_len += part.len() as u64;
                if line_len > self.max_line {
                    overlong = true;
                    pending = Vec::new();
                } else {
                    pending.extend_from_slice(part);
                }
                let Some(i) = end else { break };
                let span = Span { at, len: line_len };
                at += line_len + 1;
                if overlong {
                    self.lines += 1;
                    if self.lines == 1 {
                        return Err(LogError::Header {
                            path,
                            reason: "the first line is not a session log's header".into(),
                        });
                    }
                    let max = self.max_line;
                    self.bad_line(
                        format!("a line of {line_len} bytes, past the {max} an event may hold"),
                        false,
                    );
                } else {
                    self.line(&pending, span, &mut out, &mut changed)?;
                }
                pending.clear();
                (line_len, overlong) = (0, false);
                chunk = &chunk[i + 1..];
            }
        }
        // What follows the last newline is still being written.
        self.indexed = at;
        changed.sort_unstable();
        changed.dedup();
        out.cards = changed;
        Ok(out)
    }

    fn line(
        &mut self,
        line: &[u8],
        span: Span,
        out: &mut Refreshed,
        changed: &mut Vec<usize>,
    ) -> Result<(), LogError> {
        self.lines += 1;
        if self.lines == 1 {
            if crate::dsh::is_header(line) {
                self.dialect = Dialect::DeepSeekHarness;
                return Ok(());
            }
            return check_header(line).map_err(|reason| LogError::Header {
                path: self.path.clone(),
                reason,
            });
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        // The whole event is read, so that a line the index keeps is one
        // that reads again as an event: a line with the right type and ids
        // but a malformed body is a bad line, not a card that fails.
        let event = match self.parse(line) {
            Ok(Some(e)) => e,
            Ok(None) => {
                out.events += 1;
                return Ok(());
            }
            Err((reason, torn)) => {
                self.bad_line(reason, torn);
                return Ok(());
            }
        };
        out.events += 1;
        let owner = match event {
            Event::ToolCall { call_id, .. } => {
                self.calls.push(Call {
                    call: span,
                    result: None,
                    dispatches: Vec::new(),
                    turn: None,
                });
                self.by_id.insert(call_id, self.calls.len() - 1);
                self.calls.len() - 1
            }
            Event::ToolResult { call_id, .. } => match self.by_id.get(&call_id) {
                Some(&i) => {
                    self.calls[i].result = Some(span);
                    i
                }
                None => return Ok(()),
            },
            Event::CodeDispatchStart { parent_call_id, .. }
            | Event::CodeDispatch { parent_call_id, .. } => match self.by_id.get(&parent_call_id) {
                Some(&i) => {
                    self.calls[i].dispatches.push(span);
                    i
                }
                None => return Ok(()),
            },
            Event::Turn { calls, .. } => {
                for share in calls {
                    if let Some(&i) = self.by_id.get(&share.call_id) {
                        self.calls[i].turn = Some(span);
                        changed.push(i);
                    }
                }
                return Ok(());
            }
        };
        changed.push(owner);
        Ok(())
    }

    /// The event a line holds: `None` for one no card shows (in a
    /// DeepSeek Harness log, most of them); the reason, and whether the
    /// line looks torn, when it is not an event.
    fn parse(&self, line: &[u8]) -> Result<Option<Event>, (String, bool)> {
        match self.dialect {
            Dialect::Spillway => serde_json::from_slice::<Event>(line)
                .map(Some)
                .map_err(|e| (e.to_string(), e.is_eof())),
            Dialect::DeepSeekHarness => crate::dsh::event(line).map_err(|e| {
                let torn = serde_json::from_slice::<serde::de::IgnoredAny>(line)
                    .err()
                    .is_some_and(|e| e.is_eof());
                (e, torn)
            }),
        }
    }

    /// Whose log this is.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The bytes indexed: up to the end of the last complete line.
    pub fn indexed_bytes(&self) -> u64 {
        self.indexed
    }

    fn bad_line(&mut self, reason: String, torn: bool) {
        self.bad_count += 1;
        if self.bad.len() < KEEP_BAD {
            self.bad.push(BadLine {
                line: self.lines as usize,
                reason,
                torn,
            });
        }
    }

    /// How many cards (outer calls) the log holds.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether the log holds no call yet.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Complete lines that are not events: how many, and the first ones
    /// with why.
    pub fn bad_lines(&self) -> (u64, &[BadLine]) {
        (self.bad_count, &self.bad)
    }

    /// The cards from position `offset`, at most `limit` of them, each read
    /// again from its own lines: exactly what [`cards`](crate::card::cards)
    /// gives for the whole log, a page at a time.
    ///
    /// # Errors
    ///
    /// [`LogError`] when the file cannot be read, or a line indexed no
    /// longer parses (the file was rewritten under the index).
    pub fn cards(&self, offset: usize, limit: usize) -> Result<Vec<Card>, LogError> {
        let file = self.file()?;
        let mut out = Vec::new();
        for call in self.calls.iter().skip(offset).take(limit) {
            // The card's lines in the file's order, as a whole-log
            // projection meets them.
            let mut spans = vec![call.call];
            spans.extend(call.result);
            spans.extend(call.turn);
            spans.extend(call.dispatches.iter().copied());
            spans.sort_unstable_by_key(|s| s.at);
            let mut events = Vec::with_capacity(spans.len());
            for span in spans {
                events.extend(self.event(&file, span)?);
            }
            out.extend(cards(&events));
        }
        Ok(out)
    }

    /// The log, opened: the file this index read, else an error (it was
    /// replaced at its path: open it again).
    fn file(&self) -> Result<File, LogError> {
        let file = File::open(&self.path).map_err(io_error("open", &self.path))?;
        if identity(&file, &self.path)? != self.identity {
            return Err(LogError::Io {
                op: "follow",
                path: self.path.clone(),
                source: io::Error::other("the log was replaced at its path"),
            });
        }
        Ok(file)
    }

    /// The event on the line at `span`, read again.
    fn event(&self, file: &File, span: Span) -> Result<Option<Event>, LogError> {
        let path = &self.path;
        let mut bytes = vec![0u8; span.len as usize];
        file.read_exact_at(&mut bytes, span.at)
            .map_err(io_error("read", path))?;
        self.parse(&bytes).map_err(|(reason, _)| LogError::Io {
            op: "read again",
            path: path.clone(),
            source: io::Error::new(io::ErrorKind::InvalidData, reason),
        })
    }
}

/// A line of a card's content that holds what was searched for.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Hit {
    /// The card's position.
    pub card: usize,
    /// The card's call id.
    pub call_id: String,
    /// The content block whose text holds the line.
    pub block: usize,
    /// The line, 1-based, in that block's text.
    pub line: u64,
    /// The line, at most [`HIT_BYTES`] of it (cut at a character).
    pub text: String,
}

/// The most of a line a [`Hit`] carries.
pub const HIT_BYTES: usize = 240;

impl SessionIndex {
    /// The lines of the cards' content (their results' text blocks, as the
    /// model got them) that hold `needle`, ignoring ASCII case, in card
    /// order: at most `limit` of them, and whether there were more. Each
    /// result is read again, one at a time.
    ///
    /// # Errors
    ///
    /// As [`SessionIndex::cards`].
    pub fn search(&self, needle: &str, limit: usize) -> Result<(Vec<Hit>, bool), LogError> {
        let needle = needle.to_ascii_lowercase();
        let mut hits = Vec::new();
        if needle.is_empty() {
            return Ok((hits, false));
        }
        let file = self.file()?;
        // Only the results are read: a card's content is its result's.
        for (card, call) in self.calls.iter().enumerate() {
            let Some(span) = call.result else { continue };
            let Some(Event::ToolResult {
                call_id, content, ..
            }) = self.event(&file, span)?
            else {
                continue;
            };
            for (block, b) in content.iter().enumerate() {
                let Some(text) = b.as_text() else { continue };
                for (line, l) in (1..).zip(text.lines()) {
                    if !l.to_ascii_lowercase().contains(&needle) {
                        continue;
                    }
                    if hits.len() == limit {
                        return Ok((hits, true));
                    }
                    let mut cut = l.len().min(HIT_BYTES);
                    while !l.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    hits.push(Hit {
                        card,
                        call_id: call_id.clone(),
                        block,
                        line,
                        text: l[..cut].to_string(),
                    });
                }
            }
        }
        Ok((hits, false))
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // the tests write and cut logs themselves
mod tests {
    use super::*;
    use crate::events::{replay_file, LogSync, SessionLog};
    use crate::Block;
    use serde_json::json;
    use std::io::Write;

    fn call(id: &str, tool: &str) -> Event {
        Event::ToolCall {
            call_id: id.into(),
            tool: tool.into(),
            description: None,
            args: json!({ "code": format!("return '{id}'") }),
        }
    }

    fn result(id: &str) -> Event {
        Event::ToolResult {
            call_id: id.into(),
            content: vec![Block::text(format!("result of {id}"))],
            is_error: false,
            spills: Vec::new(),
        }
    }

    fn dispatch(parent: &str, n: u32, done: bool) -> Event {
        let sub_call_id = format!("{parent}:code:{n}");
        if done {
            Event::CodeDispatch {
                sub_call_id,
                parent_call_id: parent.into(),
                tool: "run".into(),
                args: json!({ "command": "ls" }),
                content: vec![Block::text("a\nb")],
                is_error: n % 2 == 1,
                spills: Vec::new(),
            }
        } else {
            Event::CodeDispatchStart {
                sub_call_id,
                parent_call_id: parent.into(),
                tool: "run".into(),
                args: json!({ "command": "ls" }),
            }
        }
    }

    /// Every page of the index is the same cards as the whole log's
    /// projection, whatever the page size, calls interleaved.
    #[test]
    fn pages_of_the_index_are_the_cards_of_the_whole_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let log = SessionLog::open(&path, LogSync::Never).unwrap();
        for i in 0..40 {
            let id = format!("c{i}");
            log.append(&call(&id, if i % 3 == 0 { "run_code" } else { "bash" }))
                .unwrap();
            if i % 3 == 0 {
                for n in 0..(i % 4) {
                    log.append(&dispatch(&id, n, false)).unwrap();
                    log.append(&dispatch(&id, n, true)).unwrap();
                }
            }
            // Results arrive late and out of order; the last calls pend.
            if (2..37).contains(&i) {
                log.append(&result(&format!("c{}", i - 2))).unwrap();
            }
            // Every tenth pair of calls was bounded together as a turn.
            if i % 10 == 1 {
                log.append(&Event::Turn {
                    turn_id: format!("t{i}"),
                    budget: 1000,
                    calls: [i - 1, i]
                        .iter()
                        .map(|c| crate::events::TurnShare {
                            call_id: format!("c{c}"),
                            demand: 900,
                            share: 500,
                        })
                        .collect(),
                })
                .unwrap();
            }
        }
        drop(log);
        let whole = cards(&replay_file(&path).unwrap().events);
        let index = SessionIndex::open(&path).unwrap();
        assert_eq!(index.len(), 40);
        for limit in [1, 3, 7, 40, 100] {
            let mut paged = Vec::new();
            let mut offset = 0;
            while offset < index.len() {
                paged.extend(index.cards(offset, limit).unwrap());
                offset += limit;
            }
            assert_eq!(paged, whole, "pages of {limit}");
        }
        assert!(index.cards(40, 5).unwrap().is_empty());
        // What the projection holds: each program's nested calls inside
        // its card, settled or not, pending calls as pending, turns.
        for (i, card) in whole.iter().enumerate() {
            let n = if i % 3 == 0 { i % 4 } else { 0 };
            assert_eq!(card.dispatches.len(), n, "card {i}");
            for (k, d) in card.dispatches.iter().enumerate() {
                assert_eq!(d.sub_call_id, format!("c{i}:code:{k}"));
                assert!(!d.pending);
                assert_eq!(d.is_error, k % 2 == 1);
            }
            assert_eq!(card.pending, i >= 35, "card {i}");
            assert_eq!(card.content.is_none(), card.pending);
            let turn = card.turn.as_ref().map(|t| t.turn_id.clone());
            let want = (i % 10 <= 1).then(|| format!("t{}", i - i % 10 + 1));
            assert_eq!(turn, want, "card {i}");
        }
    }

    /// A line with an event's type and ids but a malformed body (found by
    /// fuzzing: a result whose `content` is misspelled) is a bad line: the
    /// page of cards around it still reads, the call still pending.
    #[test]
    fn a_malformed_event_is_a_bad_line_not_a_page_that_fails() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut text = String::from("{\"format\":\"spillway-session\",\"version\":1}\n");
        text.push_str(&serde_json::to_string(&call("c", "run_code")).unwrap());
        text.push('\n');
        text.push_str(r#"{"type":"tool/result","callId":"c","cootent":[],"isError":false}"#);
        text.push('\n');
        text.push_str(r#"{"type":"tool/code-dispatch","subCallId":"c:code:1","parentCallId":"c"}"#);
        text.push('\n');
        std::fs::write(&path, text).unwrap();
        let index = SessionIndex::open(&path).unwrap();
        assert_eq!(index.bad_lines().0, 2);
        let cards = index.cards(0, 10).unwrap();
        assert_eq!(cards.len(), 1);
        assert!(cards[0].pending && cards[0].dispatches.is_empty());
        assert_eq!(
            cards,
            crate::card::cards(&replay_file(&path).unwrap().events)
        );
    }

    /// A search finds the lines of the results that hold the words, in
    /// card order, ignoring case, and says when it stopped at its limit.
    #[test]
    fn a_search_finds_the_lines_of_the_results_that_hold_the_words() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let log = SessionLog::open(&path, LogSync::Never).unwrap();
        for i in 0..5 {
            let id = format!("c{i}");
            log.append(&call(&id, "bash")).unwrap();
            let text = format!("start {i}\nall is well\nERROR: disk é{i} full\nend");
            log.append(&Event::ToolResult {
                call_id: id,
                content: vec![Block::text("first"), Block::text(text)],
                is_error: i == 3,
                spills: Vec::new(),
            })
            .unwrap();
        }
        drop(log);
        let index = SessionIndex::open(&path).unwrap();
        let (hits, more) = index.search("error: DISK", 10).unwrap();
        assert!(!more);
        assert_eq!(hits.len(), 5);
        for (i, h) in hits.iter().enumerate() {
            assert_eq!((h.card, h.block, h.line), (i, 1, 3));
            assert_eq!(h.text, format!("ERROR: disk é{i} full"));
            assert_eq!(h.call_id, format!("c{i}"));
        }
        let (hits, more) = index.search("error", 2).unwrap();
        assert_eq!((hits.len(), more), (2, true));
        assert!(index.search("nowhere", 10).unwrap().0.is_empty());
        assert!(index.search("", 10).unwrap().0.is_empty());
    }

    /// A line longer than an event may be is counted as bad and not held;
    /// the events after it are indexed.
    #[test]
    fn an_endless_line_is_counted_not_held() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let log = SessionLog::open(&path, LogSync::Never).unwrap();
        log.append(&call("a", "bash")).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(&vec![b'x'; 3 << 20]).unwrap();
        f.write_all(b"\n").unwrap();
        drop(f);
        log.append(&call("b", "bash")).unwrap();
        // Indexed again from the start with a bound of 1 MiB.
        let mut index = SessionIndex::open(&path).unwrap();
        (index.max_line, index.indexed, index.lines) = (1 << 20, 0, 0);
        (index.calls, index.by_id, index.bad_count) = (Vec::new(), HashMap::new(), 0);
        index.bad.clear();
        index.refresh().unwrap();
        assert_eq!(index.len(), 2);
        assert_eq!(index.bad_lines().0, 1);
        assert!(index.bad_lines().1[0].reason.contains("3145728 bytes"));
        assert_eq!(index.cards(1, 1).unwrap()[0].call_id, "b");
        // A first line that long is no header.
        let other = dir.path().join("x.jsonl");
        std::fs::write(&other, vec![b'{'; 3 << 20]).unwrap();
        let mut bad = SessionIndex::open(&other).unwrap();
        (bad.max_line, bad.indexed, bad.lines) = (1 << 20, 0, 0);
        std::fs::write(&other, [vec![b'{'; 3 << 20], b"\n".to_vec()].concat()).unwrap();
        assert!(matches!(bad.refresh(), Err(LogError::Header { .. })));
    }

    /// A refresh reads only what was appended; a line still being written
    /// waits; garbage is counted and the rest kept.
    #[test]
    fn a_refresh_follows_a_growing_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let log = SessionLog::open(&path, LogSync::Never).unwrap();
        log.append(&call("a", "bash")).unwrap();
        let mut index = SessionIndex::open(&path).unwrap();
        assert_eq!(
            (index.len(), index.cards(0, 1).unwrap()[0].content.clone()),
            (1, None)
        );
        log.append(&result("a")).unwrap();
        log.append(&call("b", "run_code")).unwrap();
        let r = index.refresh().unwrap();
        assert_eq!((r.events, r.cards), (2, vec![0, 1]));
        assert!(index.cards(0, 1).unwrap()[0].content.is_some());
        // Half a line, then garbage, then the rest of an event.
        let line = serde_json::to_string(&result("b")).unwrap();
        let (head, tail) = line.split_at(line.len() / 2);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(head.as_bytes()).unwrap();
        let r = index.refresh().unwrap();
        assert_eq!(r, Refreshed::default(), "a line without its newline waits");
        f.write_all(tail.as_bytes()).unwrap();
        f.write_all(b"\nnot json\n\n").unwrap();
        let r = index.refresh().unwrap();
        assert_eq!((r.events, r.cards), (1, vec![1]));
        assert_eq!(index.bad_lines().0, 1);
        assert_eq!(index.bad_lines().1[0].line, 6);
        assert!(index.cards(1, 1).unwrap()[0].content.is_some());
        // A log replaced at its path (rotated: a longer file renamed over
        // it) says so, and no card is read from it with this index's
        // offsets.
        let other = dir.path().join("new.jsonl");
        let mut longer = std::fs::read(&path).unwrap();
        longer.extend_from_slice(&longer.clone());
        std::fs::write(&other, &longer).unwrap();
        let kept = dir.path().join("old.jsonl");
        std::fs::rename(&path, &kept).unwrap();
        std::fs::rename(&other, &path).unwrap();
        for e in [index.refresh().unwrap_err(), index.cards(0, 2).unwrap_err()] {
            assert!(e.to_string().contains("replaced"), "{e}");
        }
        assert!(index.search("result", 5).is_err());
        std::fs::rename(&kept, &path).unwrap();
        assert_eq!(index.cards(0, 2).unwrap().len(), 2, "the same file again");
        // A log cut under the index says so.
        f.set_len(10).unwrap();
        assert!(index.refresh().is_err());
        // A file that is not a session log is refused.
        std::fs::write(dir.path().join("x"), b"{}\n").unwrap();
        assert!(SessionIndex::open(dir.path().join("x")).is_err());
    }
}
