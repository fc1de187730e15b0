//! Where a store is when a harness names none: one rule for the CLI, the
//! Python package and the Node.js package. It lives here, with the other
//! things front ends share, because it reads the process environment,
//! which the core never reads for a setting of its own.

use std::ffi::OsString;
use std::path::PathBuf;

/// The store a front end uses when the caller names none.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DefaultStore {
    /// A directory, or an `s3://BUCKET/PREFIX` URL (from `SPILLWAY_STORE`,
    /// as written).
    pub location: String,
    /// Whether the user chose it (`SPILLWAY_STORE`) rather than it being
    /// the built-in cache directory: notices then name the store, so that
    /// their read command works pasted as it is.
    pub chosen: bool,
}

/// The store to use when none is named: `$SPILLWAY_STORE`, else
/// `$XDG_CACHE_HOME/spillway`, else `~/.cache/spillway`. An empty variable
/// counts as unset. `None` when none of them is set; each front end then
/// says how to name a store in its own terms.
pub fn default_store() -> Option<DefaultStore> {
    default_store_from(&|k| std::env::var_os(k))
}

fn default_store_from(var: &dyn Fn(&str) -> Option<OsString>) -> Option<DefaultStore> {
    let set = |k: &str| var(k).filter(|v| !v.is_empty());
    if let Some(s) = set("SPILLWAY_STORE") {
        return Some(DefaultStore {
            location: s.to_string_lossy().into_owned(),
            chosen: true,
        });
    }
    let dir = set("XDG_CACHE_HOME")
        .map(|d| PathBuf::from(d).join("spillway"))
        .or_else(|| set("HOME").map(|h| PathBuf::from(h).join(".cache").join("spillway")))?;
    Some(DefaultStore {
        location: dir.to_string_lossy().into_owned(),
        chosen: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)]) -> Option<DefaultStore> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        default_store_from(&|k| {
            vars.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn the_variables_are_read_in_order_and_empty_ones_skipped() {
        let home = with(&[("HOME", "/h")]).unwrap();
        assert_eq!(
            (home.location.as_str(), home.chosen),
            ("/h/.cache/spillway", false)
        );
        let xdg = with(&[("HOME", "/h"), ("XDG_CACHE_HOME", "/x")]).unwrap();
        assert_eq!(xdg.location, "/x/spillway");
        let chosen = with(&[("HOME", "/h"), ("SPILLWAY_STORE", "s3://b/p")]).unwrap();
        assert_eq!(
            (chosen.location.as_str(), chosen.chosen),
            ("s3://b/p", true)
        );
        let empty = with(&[
            ("HOME", "/h"),
            ("SPILLWAY_STORE", ""),
            ("XDG_CACHE_HOME", ""),
        ]);
        assert_eq!(empty.unwrap().location, "/h/.cache/spillway");
        assert_eq!(with(&[]), None);
    }
}
