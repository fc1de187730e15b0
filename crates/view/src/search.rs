//! One search over the sessions' cards and, when asked, inside every
//! stored object their notices reference, within a limit of hits and a
//! deadline.

use std::collections::HashSet;
use std::time::Instant;

use serde_json::{json, Value};
use spillway::{GrepOptions, GrepPattern, Store};
use spillway_registry::card::Notice;

use crate::objects::resolve;
use crate::sessions::Sessions;

/// How many cards are read at a time to find the objects they reference.
const CARDS_AT_ONCE: usize = 256;
/// The most of a line a hit carries.
const HIT_BYTES: usize = 240;

/// An object a card references: the first card that does.
struct Referenced {
    id: String,
    session: usize,
    card: usize,
    call_id: String,
    sub_call_id: Option<String>,
}

/// Hits for `needle` (ignoring ASCII case): the cards' own text first, in
/// session and card order, then, with a store, the lines of the objects
/// the cards reference. At most `limit` hits; `more` when there were
/// others; `partial` when the deadline stopped it first.
pub(crate) fn search(
    sessions: &Sessions,
    store: Option<&Store>,
    needle: &str,
    limit: usize,
    deadline: Instant,
) -> Value {
    let mut hits = Vec::new();
    let mut errors = Vec::new();
    let (mut more, mut partial) = (false, false);
    if needle.is_empty() {
        return json!({ "hits": hits, "more": false, "partial": false });
    }
    for (position, s) in sessions.list.iter().enumerate() {
        let left = limit - hits.len();
        match s.index().search(needle, left) {
            Ok((found, over)) => {
                more |= over;
                hits.extend(found.into_iter().map(|h| {
                    json!({
                        "session": position, "card": h.card, "callId": h.call_id,
                        "block": h.block, "line": h.line, "text": h.text,
                    })
                }));
            }
            Err(e) => errors.push(format!("{}: {e}", s.name)),
        }
        if hits.len() >= limit {
            break;
        }
    }
    let mut objects = 0;
    if let Some(store) = store.filter(|_| hits.len() < limit && !more) {
        let referenced = referenced(sessions, deadline, &mut partial, &mut errors);
        let pattern = match GrepPattern::new(&regex::escape(needle), true) {
            Ok(p) => p,
            Err(e) => {
                errors.push(e.to_string());
                return json!({ "hits": hits, "more": more, "partial": partial, "errors": errors });
            }
        };
        for r in referenced {
            if Instant::now() >= deadline {
                partial = true;
                break;
            }
            if hits.len() >= limit {
                more = true;
                break;
            }
            let id = match resolve(store, &r.id) {
                Ok(id) => id,
                Err(_) => {
                    errors.push(format!("{}: not in the store", r.id));
                    continue;
                }
            };
            let mut opts = GrepOptions::default();
            opts.max_count = Some((limit - hits.len()) as u64);
            opts.max_line_bytes = HIT_BYTES;
            opts.max_bytes = usize::MAX;
            objects += 1;
            match store.grep(&id, &pattern, &opts) {
                Ok(report) => {
                    more |= report.more_matches > 0;
                    for line in report.lines.into_iter().filter(|l| l.matched) {
                        hits.push(json!({
                            "session": r.session, "card": r.card, "callId": r.call_id,
                            "subCallId": r.sub_call_id, "object": id.to_string(),
                            "line": line.line, "text": line.text,
                        }));
                    }
                }
                Err(e) => errors.push(format!("{id}: {e}")),
            }
        }
    }
    json!({
        "hits": hits, "more": more, "partial": partial,
        "objectsSearched": objects, "errors": errors,
    })
}

/// Every object the cards' notices name, once, with the first card (and
/// nested call) that names it.
fn referenced(
    sessions: &Sessions,
    deadline: Instant,
    partial: &mut bool,
    errors: &mut Vec<String>,
) -> Vec<Referenced> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    'sessions: for (position, s) in sessions.list.iter().enumerate() {
        let mut offset = 0;
        loop {
            if Instant::now() >= deadline {
                *partial = true;
                break 'sessions;
            }
            let page = match s.index().cards(offset, CARDS_AT_ONCE) {
                Ok(p) => p,
                Err(e) => {
                    errors.push(format!("{}: {e}", s.name));
                    break;
                }
            };
            if page.is_empty() {
                break;
            }
            for (i, card) in page.iter().enumerate() {
                let mut note = |n: &Notice, sub: Option<&str>| {
                    if let Some(id) = &n.id {
                        if seen.insert(id.clone()) {
                            out.push(Referenced {
                                id: id.clone(),
                                session: position,
                                card: offset + i,
                                call_id: card.call_id.clone(),
                                sub_call_id: sub.map(str::to_owned),
                            });
                        }
                    }
                };
                card.notices.iter().for_each(|n| note(n, None));
                for d in &card.dispatches {
                    d.notices.iter().for_each(|n| note(n, Some(&d.sub_call_id)));
                }
            }
            offset += page.len();
        }
    }
    out
}
