//! Value checks that go beyond a parameter's declared type (`confidence` strictly between 0.5 and
//! 1, `gpus` at least 1), run by the providers' build functions. Every failed check becomes a
//! [`ConfigProblem`] at the parameter's dotted key with the value and the fix; all are collected,
//! none stops the others. Types, required and unknown keys are `check_params`'s job, not this.

use tally_plugin::problem::show_value;
use tally_plugin::{ConfigProblem, Params};

/// Collects the problems of one provider's parameters.
pub(crate) struct Checks<'a> {
    params: &'a Params,
    problems: Vec<ConfigProblem>,
}

impl<'a> Checks<'a> {
    /// Checks over `params`.
    pub(crate) fn new(params: &'a Params) -> Self {
        Self {
            params,
            problems: Vec::new(),
        }
    }

    /// Records a problem with the value of `name`.
    pub(crate) fn problem(&mut self, name: &str, message: impl Into<String>) {
        let value = self.params.get(name).map(show_value);
        self.problems
            .push(ConfigProblem::new(self.params.key(name), value, message));
    }

    /// Records a problem at `name.sub` (a key inside a table parameter) with its value.
    pub(crate) fn problem_at(
        &mut self,
        name: &str,
        sub: &str,
        value: &serde_json::Value,
        message: &str,
    ) {
        self.problems.push(ConfigProblem::new(
            format!("{}.{sub}", self.params.key(name)),
            Some(show_value(value)),
            message,
        ));
    }

    /// The number `name` when it is set and `ok`; a problem saying `expected` when it is set
    /// and not. `None` when unset or bad.
    pub(crate) fn number(
        &mut self,
        name: &str,
        ok: impl Fn(f64) -> bool,
        expected: &str,
    ) -> Option<f64> {
        self.params.get(name)?;
        match self.params.f64(name) {
            Some(x) if x.is_finite() && ok(x) => Some(x),
            _ => {
                self.problem(name, format!("expected {expected}"));
                None
            }
        }
    }

    /// The whole number `name` when it is set and within `min..=max`.
    pub(crate) fn integer(
        &mut self,
        name: &str,
        min: u64,
        max: u64,
        expected: &str,
    ) -> Option<u64> {
        self.params.get(name)?;
        match self.params.u64(name) {
            Some(n) if (min..=max).contains(&n) => Some(n),
            _ => {
                self.problem(name, format!("expected {expected}"));
                None
            }
        }
    }

    /// `Ok` when no problem was recorded, every problem otherwise.
    pub(crate) fn finish(self) -> Result<(), Vec<ConfigProblem>> {
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(self.problems)
        }
    }
}
