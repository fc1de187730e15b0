//! Result cards: a projection of the durable log, one card per outer call.
//!
//! A card's content is the durable `tool/result` content and nothing else:
//! no separate result presenter, no metadata that could go stale. Nested
//! dispatches produce no cards. Old logs need no migration: a card reads
//! what the log holds.

use serde::Serialize;
use serde_json::Value;

use super::events::Event;
use super::Block;

/// One card per outer tool call.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Card {
    /// The call's id.
    pub call_id: String,
    /// The call's description (or the `description` among its
    /// arguments), else the tool's name.
    pub title: String,
    /// The tool.
    pub tool: String,
    /// Always `"execute"`.
    pub kind: &'static str,
    /// The code for `run_code`, else the arguments.
    pub raw_input: Value,
    /// The durable result content; `None` while the call is pending.
    pub content: Option<Vec<Block>>,
    /// Whether the content is an error.
    pub is_error: bool,
    /// Whether the call has no result yet.
    pub pending: bool,
    /// The spillway notices in the content's text blocks, in order.
    pub notices: Vec<Notice>,
    /// The program's nested calls, in the order they started: events
    /// inside this card, never cards of their own.
    pub dispatches: Vec<Dispatch>,
    /// The call's share of its turn's budget, when it was one of several
    /// calls bounded together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnPart>,
}

/// A nested call a `run_code` program made, inside its outer call's card.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Dispatch {
    /// `<outerCallId>:code:<n>`.
    pub sub_call_id: String,
    /// The tool.
    pub tool: String,
    /// A snapshot of the arguments.
    pub args: Value,
    /// The bounded durable copy of its content; `None` while it runs.
    pub content: Option<Vec<Block>>,
    /// Whether the content is an error.
    pub is_error: bool,
    /// Whether it has not settled yet.
    pub pending: bool,
    /// The spillway notices in its content's text blocks, in order.
    pub notices: Vec<Notice>,
}

impl Dispatch {
    /// A nested call that has started and not settled.
    fn started(sub_call_id: &str, tool: &str, args: &Value) -> Dispatch {
        Dispatch {
            sub_call_id: sub_call_id.to_owned(),
            tool: tool.to_owned(),
            args: args.clone(),
            content: None,
            is_error: false,
            pending: true,
            notices: Vec::new(),
        }
    }
}

/// One call's part of a turn's budget (a `tool/turn` event).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TurnPart {
    /// The turn's id.
    pub turn_id: String,
    /// The turn's budget: the most text its results hold together.
    pub budget: u64,
    /// How many calls the turn bounded together.
    pub calls: usize,
    /// The text bytes this call's result held under its own policy.
    pub demand: u64,
    /// The text bytes it holds in the turn.
    pub share: u64,
}

/// Projects a session's events into cards.
pub fn cards(events: &[Event]) -> Vec<Card> {
    let mut out: Vec<Card> = Vec::new();
    let mut turns: Vec<(String, TurnPart)> = Vec::new();
    let card_of = |out: &mut Vec<Card>, id: &str| -> Option<usize> {
        out.iter().rposition(|c| c.call_id == id)
    };
    for e in events {
        match e {
            Event::ToolCall {
                call_id,
                tool,
                description,
                args,
            } => {
                let raw_input = match (tool.as_str(), args.get("code")) {
                    ("run_code", Some(code)) => code.clone(),
                    _ => args.clone(),
                };
                // The title: the call's description, else one the model
                // wrote among the arguments (a `run_code` call's), else the
                // tool.
                let title = description
                    .clone()
                    .or_else(|| args.get("description")?.as_str().map(str::to_owned))
                    .unwrap_or_else(|| tool.clone());
                out.push(Card {
                    call_id: call_id.clone(),
                    title,
                    tool: tool.clone(),
                    kind: "execute",
                    raw_input,
                    content: None,
                    is_error: false,
                    pending: true,
                    notices: Vec::new(),
                    dispatches: Vec::new(),
                    turn: None,
                });
            }
            Event::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                if let Some(i) = card_of(&mut out, call_id) {
                    let c = &mut out[i];
                    (c.content, c.is_error, c.pending, c.notices) = settled(content, *is_error);
                }
            }
            // Nested dispatches are events inside their card, never cards.
            Event::CodeDispatchStart {
                sub_call_id,
                parent_call_id,
                tool,
                args,
            } => {
                if let Some(i) = card_of(&mut out, parent_call_id) {
                    out[i]
                        .dispatches
                        .push(Dispatch::started(sub_call_id, tool, args));
                }
            }
            Event::CodeDispatch {
                sub_call_id,
                parent_call_id,
                tool,
                args,
                content,
                is_error,
                ..
            } => {
                let Some(i) = card_of(&mut out, parent_call_id) else {
                    continue;
                };
                let list = &mut out[i].dispatches;
                let at = match list.iter().rposition(|d| &d.sub_call_id == sub_call_id) {
                    Some(at) => at,
                    // Settled without a start (an older writer): it is
                    // still one of the card's calls.
                    None => {
                        list.push(Dispatch::started(sub_call_id, tool, args));
                        list.len() - 1
                    }
                };
                let d = &mut list[at];
                (d.content, d.is_error, d.pending, d.notices) = settled(content, *is_error);
            }
            Event::Turn {
                turn_id,
                budget,
                calls,
            } => {
                for c in calls {
                    turns.push((
                        c.call_id.clone(),
                        TurnPart {
                            turn_id: turn_id.clone(),
                            budget: *budget,
                            calls: calls.len(),
                            demand: c.demand,
                            share: c.share,
                        },
                    ));
                }
            }
        }
    }
    // A turn is recorded before its results, and may come before or after
    // its calls: it joins its cards once all are read.
    for (call_id, part) in turns {
        if let Some(i) = card_of(&mut out, &call_id) {
            out[i].turn = Some(part);
        }
    }
    out
}

/// A call's fields once its content is in: the content, whether it is an
/// error, pending no more, and its notices.
fn settled(content: &[Block], is_error: bool) -> (Option<Vec<Block>>, bool, bool, Vec<Notice>) {
    (
        Some(content.to_vec()),
        is_error,
        false,
        content_notices(content),
    )
}

/// The notices of a content's text blocks, each with its block.
fn content_notices(content: &[Block]) -> Vec<Notice> {
    content
        .iter()
        .enumerate()
        .filter_map(|(i, b)| Some((i, b.as_text()?)))
        .flat_map(|(i, text)| {
            notices(text)
                .into_iter()
                .map(move |n| Notice { block: i, ..n })
        })
        .collect()
}

/// What a host sends a UI for a result: the content, once. There is no view
/// payload that could repeat it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct HostFrame {
    /// `"tool/result"`.
    pub event: &'static str,
    /// The call's id.
    pub call_id: String,
    /// The durable content.
    pub content: Vec<Block>,
    /// Whether it is an error.
    pub is_error: bool,
}

impl HostFrame {
    /// The frame for a `tool/result` event.
    pub fn for_event(e: &Event) -> Option<HostFrame> {
        match e {
            Event::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => Some(HostFrame {
                event: "tool/result",
                call_id: call_id.clone(),
                content: content.clone(),
                is_error: *is_error,
            }),
            _ => None,
        }
    }
}

/// A spillway notice found in a text: what it says was left out and where
/// to read it, so that a viewer can show the notice as what it is and
/// fetch exactly the missing part.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Notice {
    /// The content block whose text holds it (0 for a lone text).
    pub block: usize,
    /// Where the notice starts in the text, in bytes.
    pub start: usize,
    /// Where it ends (just past its `]`).
    pub end: usize,
    /// The stored object's id as the notice gives it (short or whole);
    /// `None` when the output could not be stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The omitted lines, 1-based and inclusive, as `A:B`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<String>,
    /// The omitted bytes, 0-based and half-open, as `A:B`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
    /// A JSON preview marker's pointer to the value it stands for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
}

/// Every spillway notice in `text` (`[spillway: …]`, a JSON marker's
/// `…[spillway: …]…` too), in order, whichever read hint wrote it: the
/// command line's (`--lines A:B`, `--pointer P`), a tool's
/// (`lines="A:B"`, `pointer="P"`) or the library's default (`lines A:B`).
pub fn notices(text: &str) -> Vec<Notice> {
    const OPEN: &str = "[spillway: ";
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(OPEN) {
        let start = from + i;
        let body_from = start + OPEN.len();
        let end = notice_end(text, body_from);
        // A marker inside a JSON string (a JSON preview's raw text) is read
        // as the string holds it: every quote in it is escaped, and it
        // decodes as one; a notice in plain text does not.
        let raw = &text[body_from..end];
        let body = serde_json::from_str::<String>(&format!("\"{raw}\""))
            .ok()
            .filter(|_| raw.contains("\\\""))
            .unwrap_or_else(|| raw.to_string());
        out.push(Notice {
            block: 0,
            start,
            end,
            id: id_in(&body),
            lines: range_in(&body, "lines"),
            bytes: range_in(&body, "bytes"),
            pointer: pointer_in(&body),
        });
        from = end.max(body_from);
    }
    out
}

/// Just past the `]` that closes the notice whose text starts at `from`:
/// the first one that ends a line, the text, or a JSON string (a notice's
/// own text may hold a bracket, an error message's say); else the first.
fn notice_end(text: &str, from: usize) -> usize {
    let rest = &text[from..];
    let closes = |j: usize| {
        matches!(
            rest[j + 1..].chars().next(),
            None | Some('\n' | '"' | '\\' | '…' | '\r')
        )
    };
    let mut first = None;
    for (j, _) in rest.match_indices(']') {
        first.get_or_insert(j);
        if closes(j) {
            return from + j + 1;
        }
    }
    first.map_or(text.len(), |j| from + j + 1)
}

/// The id a notice names: `blake3:HEX` (whole or a prefix of at least 16
/// digits), else a local store's object path (`…/objects/AB/CDEF…`, as
/// a hint that names the file does).
fn id_in(body: &str) -> Option<String> {
    let hex_run = |s: &str| -> String { s.chars().take_while(char::is_ascii_hexdigit).collect() };
    if let Some(at) = body.find("blake3:") {
        let hex = hex_run(&body[at + 7..]);
        if hex.len() >= 16 {
            return Some(format!("blake3:{hex}"));
        }
    }
    for (at, _) in body.match_indices("/objects/") {
        let rest = &body[at + "/objects/".len()..];
        let (dir, file) = (hex_run(rest), rest.get(3..).map(hex_run));
        if let (2, Some(file)) = (dir.len(), file) {
            if rest.as_bytes()[2] == b'/' && file.len() == 62 {
                return Some(format!("blake3:{dir}{file}"));
            }
        }
    }
    None
}

/// `A:B` after `unit` written as `unit="A:B"`, `--unit A:B` or `unit A:B`.
fn range_in(body: &str, unit: &str) -> Option<String> {
    for (at, _) in body.match_indices(unit) {
        let after = &body[at + unit.len()..];
        let Some(value) = after
            .strip_prefix("=\"")
            .or_else(|| after.strip_prefix(' '))
        else {
            continue;
        };
        let range: String = value
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ':')
            .collect();
        let mut parts = range.splitn(2, ':');
        let (a, b) = (parts.next().unwrap_or(""), parts.next());
        if !a.is_empty() && b.is_some() {
            return Some(range);
        }
    }
    None
}

/// A marker's pointer: a JSON string after `pointer=`, one shell word
/// after `--pointer `, or (the library's default) one shell word after the
/// id.
fn pointer_in(body: &str) -> Option<String> {
    if let Some(at) = body.find("pointer=\"") {
        let rest = &body[at + "pointer=".len()..];
        let mut de = serde_json::Deserializer::from_str(rest).into_iter::<String>();
        return de.next().and_then(Result::ok);
    }
    if let Some(at) = body.find("--pointer ") {
        return Some(shell_word(&body[at + "--pointer ".len()..]));
    }
    let id = id_in(body)?;
    let after = &body[body.find(&id)? + id.len()..];
    let word = after.strip_prefix(' ')?;
    word.starts_with(['/', '\'']).then(|| shell_word(word))
}

/// The first word of `word` as a POSIX shell reads it (single quotes,
/// backslashes), up to a space or the notice's `]`.
fn shell_word(word: &str) -> String {
    let mut out = String::new();
    let mut chars = word.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    out.push(q);
                }
            }
            '\\' => out.extend(chars.next()),
            ' ' | ']' => break,
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use spillway::{Format, Policy, ReadHint, Selection, Spiller, Store};

    fn spiller(hint: &ReadHint, format: Format) -> (tempfile::TempDir, Spiller) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let policy = Policy::builder()
            .max_inline_bytes(2000)
            .format(format)
            .read_hint(hint)
            .build()
            .unwrap();
        (dir, Spiller::new(policy, store).unwrap())
    }

    fn hints() -> Vec<ReadHint> {
        vec![
            ReadHint::Id,
            crate::spill_read_hint(),
            spillway_process::cli_read_hint(Some("/srv/it's [a] store")),
        ]
    }

    /// The notice of every read hint gives the object and the exact range
    /// the outcome says was omitted; reading that range gives the lines.
    #[test]
    fn a_notice_names_the_object_and_the_omitted_range_whatever_the_hint() {
        // Just over the 2,000-byte budget (1.05x, 1.95x) and well past it.
        for (lines, hint) in [110, 200, 500]
            .into_iter()
            .flat_map(|n| hints().into_iter().map(move |h| (n, h)))
        {
            let input: String = (1..=lines)
                .map(|i| format!("line {i} of the log\n"))
                .collect();
            let (_dir, s) = spiller(&hint, Format::Text);
            let out = s.apply(input.as_bytes()).unwrap();
            let found = notices(&out.content);
            assert_eq!(found.len(), 1, "{hint:?}: {}", out.content);
            let n = &found[0];
            let [a, b] = out.omitted_range.unwrap();
            assert_eq!(
                n.lines.as_deref(),
                Some(format!("{a}:{b}").as_str()),
                "{hint:?}"
            );
            let id = n.id.as_deref().unwrap();
            assert!(
                out.spill.as_ref().unwrap().id.to_string().starts_with(id),
                "{hint:?}"
            );
            assert!(out.content[n.start..n.end].starts_with("[spillway: "));
            assert!(out.content[n.start..n.end].ends_with(']'));
            let text = s
                .store()
                .read(
                    &out.spill.unwrap().id,
                    &Selection::Lines(format!("{a}:{b}").parse().unwrap()),
                )
                .unwrap();
            assert!(String::from_utf8(text)
                .unwrap()
                .starts_with(&format!("line {a} of")));
        }
    }

    /// A JSON preview's markers give their pointers, each of which reads
    /// back the value it stands for, keys with spaces and quotes included.
    #[test]
    fn a_markers_pointer_reads_back_its_value_whatever_the_hint() {
        let doc = serde_json::json!({
            "a key with \"quotes\" and spaces": (0..400).map(|i| format!("value {i}")).collect::<Vec<_>>(),
            "n": 1,
        });
        let input = serde_json::to_vec(&doc).unwrap();
        for hint in hints() {
            let (_dir, s) = spiller(&hint, Format::Json);
            let out = s.apply(&input).unwrap();
            let id = out.spill.clone().unwrap().id;
            let found: Vec<Notice> = notices(&out.content)
                .into_iter()
                .filter(|n| n.pointer.is_some())
                .collect();
            assert!(!found.is_empty(), "{hint:?}: {}", out.content);
            for n in found {
                let pointer: spillway::JsonPointer = n.pointer.unwrap().parse().unwrap();
                let mut value = Vec::new();
                s.store().read_pointer(&id, &pointer, &mut value).unwrap();
                assert!(!value.is_empty(), "{hint:?}");
            }
        }
    }

    /// A hint that names the object's file (DeepSeek Harness's plugin's)
    /// gives the object and the range as well.
    #[test]
    fn a_notice_that_names_the_objects_file_gives_its_id() {
        let hex = "8a7a98ed993d622d94e08c46e557ae246959745f0b65d1848e19d0d5e3e11e48";
        let t = format!(
            "line 64\n[spillway: omitted lines 65-4881 (4817 lines, 47198 bytes) of 5000 lines, 48889 bytes. Full output stored at: /srv/store/v1/objects/{}/{}. Use read with offset/limit, or grep this path; the omitted part is lines 65:4881.]\nline 4882",
            &hex[..2],
            &hex[2..]
        );
        let n = notices(&t);
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].id.as_deref(), Some(format!("blake3:{hex}").as_str()));
        assert_eq!(n[0].lines.as_deref(), Some("65:4881"));
        // Not an object's path: no id.
        assert_eq!(notices("[spillway: see /objects/8a/xyz]")[0].id, None);
        assert_eq!(notices("[spillway: see /objects/8a7a/98]")[0].id, None);
    }

    #[test]
    fn text_without_a_notice_has_none_and_brackets_inside_one_are_kept() {
        assert!(notices("plain [text] here").is_empty());
        let t = "x\n[spillway: could not be saved: disk [sda1] full]\ny";
        let n = notices(t);
        assert_eq!(n.len(), 1);
        assert_eq!(
            &t[n[0].start..n[0].end],
            "[spillway: could not be saved: disk [sda1] full]"
        );
        assert_eq!((n[0].id.clone(), n[0].lines.clone()), (None, None));
    }
}
