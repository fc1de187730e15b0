//! Building a registry: its tools, policies, session log and skip list.

use std::sync::Arc;

use spillway::{Policy, Spiller};

use crate::{PostPolicy, PrePolicy, Registry, Tool};

/// Builds a [`Registry`]. Its methods take and return `&mut Self`, as every
/// builder of the workspace does, so it can be set up in a chain or step by
/// step.
pub struct RegistryBuilder {
    pub(crate) inner: Registry,
}

impl RegistryBuilder {
    /// Adds a tool.
    pub fn tool(&mut self, tool: impl Tool + 'static) -> &mut Self {
        self.inner
            .tools
            .insert(tool.name().to_string(), Arc::new(tool));
        self
    }

    /// Adds a pre-execute policy (they run in the order added).
    pub fn pre(&mut self, p: impl PrePolicy + 'static) -> &mut Self {
        self.inner.pre.push(Arc::new(p));
        self
    }

    /// Adds a post-execute policy (they run in the order added).
    pub fn post(&mut self, p: impl PostPolicy + 'static) -> &mut Self {
        self.inner.post.push(Arc::new(p));
        self
    }

    /// A policy of its own for the tool `name` (a web fetch may get 8 KiB
    /// while `bash` gets 32 KiB); other tools keep the registry's. The
    /// tool's outer results, and the durable copies of its nested calls,
    /// are bounded by it; its objects go to the same store. A policy whose
    /// notice does not fit its budget with this store's paths is refused.
    ///
    /// # Errors
    ///
    /// [`spillway::PolicyError`] when the policy does not fit the store.
    pub fn policy(
        &mut self,
        name: impl Into<String>,
        policy: Policy,
    ) -> Result<&mut Self, spillway::PolicyError> {
        let spiller = Spiller::new(policy, self.inner.spiller.store().clone())?;
        self.inner.per_tool.insert(name.into(), spiller);
        Ok(self)
    }

    /// The tools whose results skip the spill stage. Default: `read`,
    /// `spill_read` and `spill_grep`.
    pub fn skip<I: IntoIterator<Item = S>, S: Into<String>>(&mut self, names: I) -> &mut Self {
        self.inner.skip = names.into_iter().map(Into::into).collect();
        self
    }

    /// The registry.
    pub fn build(&self) -> Registry {
        self.inner.clone()
    }
}
