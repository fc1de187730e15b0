//! Stored objects as the API reads them: an id or prefix resolved, a page
//! of a selection, the store's errors as answers.

use std::collections::HashMap;

use axum::http::StatusCode;
use serde_json::{json, Value};
use spillway::{
    ByteRange, ContentId, IdPrefix, JsonPointer, LineRange, Selection, Store, StoreError,
};

use crate::answer::{failure, number, Failure};
use crate::MAX_PAGE_BYTES;

/// One page of a stored object: the text, what it is, what follows it.
pub(crate) fn object_page(
    store: &Store,
    id: &str,
    q: &HashMap<String, String>,
) -> Result<Value, Failure> {
    let bad = |m: String| failure(StatusCode::BAD_REQUEST, m);
    let id = resolve(store, id)?;
    let limit = number(q, "limit", MAX_PAGE_BYTES)?.clamp(1, MAX_PAGE_BYTES);
    let sel = match (q.get("lines"), q.get("bytes"), q.get("pointer")) {
        (Some(l), None, None) => {
            Selection::Lines(l.parse::<LineRange>().map_err(|e| bad(e.to_string()))?)
        }
        (None, Some(b), None) => {
            Selection::Bytes(b.parse::<ByteRange>().map_err(|e| bad(e.to_string()))?)
        }
        (None, None, Some(p)) => {
            let pointer: JsonPointer = p
                .parse()
                .map_err(|e: spillway::PointerError| bad(e.to_string()))?;
            Selection::Bytes(store.pointer_range(&id, &pointer).map_err(store_failure)?)
        }
        (None, None, None) => Selection::All,
        _ => return Err(bad("give one of `lines`, `bytes` and `pointer`".into())),
    };
    let page = store.page(&id, &sel, limit).map_err(store_failure)?;
    Ok(json!({
        "id": id.to_string(),
        "text": page.text(),
        "shown": selection_text(&page.shown),
        "next": page.next.as_ref().map(selection_text),
        "start": page.start,
        "objectBytes": page.object_bytes,
        "objectLines": page.object_lines,
    }))
}

/// An id as a notice gives it, whole or a prefix: the store's object.
pub(crate) fn resolve(store: &Store, text: &str) -> Result<ContentId, Failure> {
    let prefix: IdPrefix = text
        .parse()
        .map_err(|e: spillway::IdError| failure(StatusCode::BAD_REQUEST, e.to_string()))?;
    store.resolve(&prefix).map_err(store_failure)
}

/// A selection as the API writes it: `lines=A:B`, `bytes=A:B` or `all`.
fn selection_text(sel: &Selection) -> String {
    let end = |e: Option<u64>| e.map_or(String::new(), |e| e.to_string());
    match sel {
        Selection::Lines(l) => format!("lines={}:{}", l.first(), end(l.last())),
        Selection::Bytes(b) => format!("bytes={}:{}", b.start(), end(b.end())),
        _ => "all".into(),
    }
}

/// A store's error as an answer: what is missing, damaged or unreachable.
pub(crate) fn store_failure(e: StoreError) -> Failure {
    let status = match &e {
        StoreError::NotFound { .. } => StatusCode::NOT_FOUND,
        StoreError::Ambiguous { .. } => StatusCode::CONFLICT,
        StoreError::OutOfRange { .. } => StatusCode::RANGE_NOT_SATISFIABLE,
        StoreError::Corrupt { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        _ => StatusCode::BAD_GATEWAY,
    };
    failure(status, e.to_string())
}
