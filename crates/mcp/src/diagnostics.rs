//! Notes for a person about what a server met: an upstream server that
//! could not be reached, a tool renamed because its name was taken, a line
//! that is not JSON, a session log that could not be written. The library
//! never writes them anywhere itself: the caller says where they go (the
//! `spillway` binary writes them to stderr), and by default they are
//! dropped.

use std::fmt;
use std::sync::Arc;

/// A function that takes a note.
type Say = dyn Fn(&str) + Send + Sync;

/// Where a server's notes for a person go. Cheap to clone.
#[derive(Clone, Default)]
pub struct Diagnostics(Option<Arc<Say>>);

impl Diagnostics {
    /// Notes go to `f`, one line each, without a line end.
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Diagnostics {
        Diagnostics(Some(Arc::new(f)))
    }

    /// Notes are dropped.
    pub fn none() -> Diagnostics {
        Diagnostics(None)
    }

    /// Says `note`.
    pub fn say(&self, note: &str) {
        if let Some(f) = &self.0 {
            f(note);
        }
    }
}

impl fmt::Debug for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Diagnostics(to a caller's function)"
        } else {
            "Diagnostics(dropped)"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn notes_reach_the_callers_function_and_none_drops_them() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let to = seen.clone();
        let d = Diagnostics::new(move |n| to.lock().unwrap().push(n.to_owned()));
        d.clone().say("one");
        d.say("two");
        Diagnostics::none().say("lost");
        assert_eq!(*seen.lock().unwrap(), ["one", "two"]);
    }
}
