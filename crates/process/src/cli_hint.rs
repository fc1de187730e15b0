//! The read hint of the `spillway` command line: what a notice says to run
//! to read back what it left out. The CLI and both language packages give
//! it (`Policy::build_for_store`), so that one input gives one content
//! whichever of them stored it, and a person can paste the command into a
//! shell as it is.

use spillway::{shell_quote, ReadHint};

/// The `stored` template: `spillway show ID --lines A:B` (or `--bytes`).
const STORED: &str =
    "Output stored; read it with: spillway show {short_id} --{read_unit} {read_range}";

/// The `pointer` template of a JSON preview's markers.
const POINTER: &str = "spillway show {short_id} --pointer {pointer}";

/// The command line's read hint, naming `store` (quoted for a POSIX shell)
/// with `--store` when it is given: for a store other than the default one,
/// which the command would not find on its own.
pub fn cli_read_hint(store: Option<&str>) -> ReadHint {
    let with_store = |template: &str| match store {
        None => template.to_string(),
        Some(store) => {
            // Braces in the location are literal text in a template.
            let word = shell_quote(store).replace('{', "{{").replace('}', "}}");
            template.replacen("spillway show", &format!("spillway --store {word} show"), 1)
        }
    };
    ReadHint::Templates {
        stored: with_store(STORED),
        pointer: with_store(POINTER),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spillway::{Policy, Spiller, Store};

    /// The notice of a store named on the command line reads back with the
    /// command it prints, quoted as a shell would need, braces and quotes in
    /// the location included.
    #[test]
    fn the_hint_names_a_store_as_one_shell_word() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("it's {a} store");
        let store = Store::open(&root).unwrap();
        let location = store.location().to_string();
        let policy = Policy::builder()
            .max_inline_bytes(4096)
            .build_for_store(&store, &cli_read_hint(Some(&location)))
            .unwrap();
        let input: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let out = Spiller::new(policy, store)
            .unwrap()
            .apply(input.as_bytes())
            .unwrap();
        let expect = format!("spillway --store {} show blake3:", shell_quote(&location));
        assert!(out.content.contains(&expect), "{}", out.content);
        assert!(out.content.len() <= 4096);
        // Without a store, none is named.
        match cli_read_hint(None) {
            ReadHint::Templates { stored, pointer } => {
                assert!(stored.contains("read it with: spillway show {short_id}"));
                assert_eq!(pointer, POINTER);
            }
            other => panic!("{other:?}"),
        }
    }
}
