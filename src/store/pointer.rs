//! Reading the value a JSON Pointer names out of a stored JSON document.

use std::io;

use super::{ByteRange, ContentId, ReadReport, Selection, Store, StoreError};
use crate::json::{JsonPointer, PointerSearch, SearchError};

impl Store {
    /// Writes the value at `pointer` in a stored JSON document to `out`,
    /// exactly as it is written there (a string with its quotes and
    /// escapes). As with [`Store::read`], no byte is written before the
    /// object has been checked against its id. Memory stays bounded: the
    /// document is scanned as it streams, one bit a level of nesting.
    ///
    /// A member named twice in one object: the first is the one read.
    ///
    /// # Errors
    ///
    /// [`StoreError::OutOfRange`] when the object is not one JSON document
    /// or the pointer names nothing in it (saying how much of it matched),
    /// and the errors of [`Store::read_into`].
    ///
    /// # Examples
    ///
    /// ```
    /// use spillway::{JsonPointer, Store, WriteOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = Store::open(dir.path()).unwrap();
    /// let doc = br#"{"items": [1, {"name": "a/b"}], "n": 2}"#;
    /// let obj = store.put(doc, WriteOptions::raw()).unwrap();
    /// let mut out = Vec::new();
    /// let p: JsonPointer = "/items/1/name".parse().unwrap();
    /// store.read_pointer(&obj.id, &p, &mut out).unwrap();
    /// assert_eq!(out, br#""a/b""#);
    /// assert!(store.read_pointer(&obj.id, &"/items/7".parse().unwrap(), &mut out).is_err());
    /// ```
    pub fn read_pointer(
        &self,
        id: &ContentId,
        pointer: &JsonPointer,
        out: &mut dyn io::Write,
    ) -> Result<ReadReport, StoreError> {
        let sel = Selection::Bytes(self.pointer_range(id, pointer)?);
        self.read_into(id, &sel, out)
    }

    /// The bytes of the value a JSON Pointer names in an object that holds
    /// one JSON document (checked against its id, as every read is), for
    /// a reader that pages it ([`Store::page`]).
    ///
    /// # Errors
    ///
    /// Those of [`Store::read_pointer`].
    pub fn pointer_range(
        &self,
        id: &ContentId,
        pointer: &JsonPointer,
    ) -> Result<ByteRange, StoreError> {
        let mut search = Some(PointerSearch::new(pointer));
        self.scan_good(id, &mut |chunk| match chunk {
            Some(chunk) => {
                if let Some(s) = search.as_mut() {
                    s.feed(chunk);
                }
            }
            None => search = Some(PointerSearch::new(pointer)),
        })?;
        let search = search.unwrap_or_else(|| PointerSearch::new(pointer));
        let (start, end) = search.finish().map_err(|e| StoreError::OutOfRange {
            detail: match e {
                SearchError::NotJson(at) => {
                    format!("object {id} is not one JSON document (at byte {at})")
                }
                SearchError::Missing(matched) => {
                    let mut found = JsonPointer::default();
                    for t in pointer.tokens().iter().take(matched) {
                        found = found.child(t);
                    }
                    format!(
                        "the JSON Pointer {pointer} names no value in object {id} (the deepest part that exists is {})",
                        if found.is_root() { "the whole document (\"\")".to_owned() } else { found.to_string() }
                    )
                }
            },
        })?;
        Ok(ByteRange::with_len(start, end.saturating_sub(start)))
    }
}
