//! Token counts for budgets in tokens: the vocabularies of OpenAI's
//! `o200k_base` and `cl100k_base` (shipped inside the binary, nothing is
//! downloaded), or an estimate of four bytes a token.
//!
//! The vocabularies are behind the default-on `tokenizers` feature (they add
//! about 10 MB to a binary). Without it, a policy with a token budget must
//! use [`Tokenizer::Approx`]: building one that names another tokenizer
//! fails with [`PolicyError::TokenizerUnavailable`](crate::PolicyError::TokenizerUnavailable).

use serde::{Deserialize, Serialize};

/// How the model-facing text is counted in tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Tokenizer {
    /// `o200k_base` (GPT-4o and later). The default.
    #[default]
    O200k,
    /// `cl100k_base` (GPT-4, GPT-3.5).
    Cl100k,
    /// Four bytes a token, rounded up: no vocabulary, for speed.
    Approx,
}

impl Tokenizer {
    /// The name used in configs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::O200k => "o200k",
            Tokenizer::Cl100k => "cl100k",
            Tokenizer::Approx => "approx",
        }
    }

    /// Whether this build carries the tokenizer's vocabulary: always for
    /// [`Approx`](Tokenizer::Approx), and for the others with the
    /// `tokenizers` feature.
    pub fn is_available(self) -> bool {
        matches!(self, Tokenizer::Approx) || cfg!(feature = "tokenizers")
    }

    /// The number of tokens `text` is under this tokenizer.
    ///
    /// The first count with a vocabulary loads it (about 0.1 s for
    /// `o200k`); later ones reuse it. A tokenizer that is not
    /// [available](Self::is_available) counts as `Approx` does; a policy
    /// never gets that far, it refuses such a tokenizer when it is built.
    pub fn count(self, text: &str) -> usize {
        match self {
            #[cfg(feature = "tokenizers")]
            Tokenizer::O200k => bpe_openai::o200k_base().count(text),
            #[cfg(feature = "tokenizers")]
            Tokenizer::Cl100k => bpe_openai::cl100k_base().count(text),
            _ => text.len().div_ceil(4),
        }
    }
}

impl std::str::FromStr for Tokenizer {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "o200k" | "o200k_base" => Ok(Tokenizer::O200k),
            "cl100k" | "cl100k_base" => Ok(Tokenizer::Cl100k),
            "approx" => Ok(Tokenizer::Approx),
            other => Err(format!(
                "unknown tokenizer {other:?} (expected o200k, cl100k or approx)"
            )),
        }
    }
}

impl std::fmt::Display for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(feature = "tokenizers")]
    fn counts_known_strings() {
        // "hello world" is two tokens in both vocabularies.
        assert_eq!(Tokenizer::O200k.count("hello world"), 2);
        assert_eq!(Tokenizer::Cl100k.count("hello world"), 2);
        assert_eq!(Tokenizer::Approx.count("hello world"), 3);
        assert_eq!(Tokenizer::Approx.count(""), 0);
        for t in [Tokenizer::O200k, Tokenizer::Cl100k, Tokenizer::Approx] {
            assert_eq!(t.name().parse::<Tokenizer>().unwrap(), t);
        }
        assert!("gpt2".parse::<Tokenizer>().is_err());
    }

    #[test]
    #[cfg(not(feature = "tokenizers"))]
    fn without_the_vocabularies_a_token_budget_must_be_approx() {
        assert!(!Tokenizer::O200k.is_available());
        assert!(Tokenizer::Approx.is_available());
        let refused = crate::Policy::builder()
            .max_inline_tokens(Some(1000))
            .build();
        assert!(matches!(
            refused,
            Err(crate::PolicyError::TokenizerUnavailable(Tokenizer::O200k))
        ));
        crate::Policy::builder()
            .max_inline_tokens(Some(1000))
            .tokenizer(Tokenizer::Approx)
            .build()
            .unwrap();
    }
}
