//! Property-test settings shared by the integration tests that run
//! property tests.

/// Property-test settings: `cases` random cases, with failures persisted
/// beside the test file as their seeds (`cc …` lines) and at most a short
/// excerpt of the shrunk input. proptest writes an input's whole `Debug`
/// dump by default, and one shrunk JSON document once made a 68 MB file.
pub fn config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        failure_persistence: Some(Box::new(SeedsOnly(
            proptest::test_runner::FileFailurePersistence::SourceParallel("proptest-regressions"),
        ))),
        ..proptest::test_runner::Config::default()
    }
}

/// The file persistence of proptest with the input's dump capped.
#[derive(Debug, Clone, PartialEq)]
struct SeedsOnly(proptest::test_runner::FileFailurePersistence);

/// How much of a shrunk input's dump a regression line keeps.
const DUMP_EXCERPT: usize = 160;

/// A `Debug` value printed as the first characters of its dump and a count
/// of the rest.
struct Excerpt<'a>(&'a dyn std::fmt::Debug);

impl std::fmt::Debug for Excerpt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dump = format!("{:?}", self.0);
        match dump.char_indices().nth(DUMP_EXCERPT) {
            None => f.write_str(&dump),
            Some((cut, _)) => write!(
                f,
                "{}… ({} characters left out)",
                &dump[..cut],
                dump[cut..].chars().count()
            ),
        }
    }
}

use proptest::test_runner::FailurePersistence;

impl FailurePersistence for SeedsOnly {
    fn load_persisted_failures2(
        &self,
        source_file: Option<&'static str>,
    ) -> Vec<proptest::test_runner::PersistedSeed> {
        self.0.load_persisted_failures2(source_file)
    }

    fn save_persisted_failure2(
        &mut self,
        source_file: Option<&'static str>,
        seed: proptest::test_runner::PersistedSeed,
        shrunken_value: &dyn std::fmt::Debug,
    ) {
        self.0
            .save_persisted_failure2(source_file, seed, &Excerpt(shrunken_value))
    }

    fn box_clone(&self) -> Box<dyn FailurePersistence> {
        Box::new(self.clone())
    }

    fn eq(&self, other: &dyn FailurePersistence) -> bool {
        other
            .as_any()
            .downcast_ref::<Self>()
            .is_some_and(|o| o == self)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[test]
fn a_regression_line_keeps_a_short_excerpt_of_the_input() {
    let long = "x".repeat(10_000);
    let line = format!("{:?}", Excerpt(&long));
    assert!(line.starts_with("\"xxx"), "{line}");
    assert!(line.ends_with("(9842 characters left out)"), "{line}");
    assert!(line.chars().count() < DUMP_EXCERPT + 40, "{line}");
    assert_eq!(format!("{:?}", Excerpt(&"short")), "\"short\"");
}
