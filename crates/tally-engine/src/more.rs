//! Judging with room for more pairs (`docs/verdicts.md#more-pairs`): the verdict rule is told the
//! campaign's `repeats` (its first look) and whether more pairs can be measured; when it asks for pairs — to
//! re-measure one with a far sample, or for a second look at an inconclusive gain — they are
//! measured in the same evaluation (`evaluate`), each sample committed the moment it ends and
//! counted like any other (`gpu_hours`), the stop rule asked before each one; then the rule is
//! asked again with them in the case. A failed sample, a hold or a stop ends the extra pairs: the
//! rule then judges the pairs there are. Ctrl-C and a killed run leave the evaluation as any
//! other (`docs/campaign.md#crash-safety`): nothing measured is lost, and the next run evaluates
//! again.

use tally_contract::CancelToken;
use tally_model::{Campaign, CandidateId, EvaluationId};
use tally_plugin::{Judgement, Sampling, StopDecision};

use crate::engine::Engine;
use crate::error::Result;
use crate::evaluate::{Running, SamplesEnd};
use crate::judge::Asked;

/// More pairs than any rule may ask for per evaluation (`max_extra_pairs` is at most 1000): past
/// this the engine stops measuring and has the rule judge what there is.
const EXTRA_PAIRS_LIMIT: u32 = 1000;

/// How judging with room for more pairs ended.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ruled {
    /// The judgement (with the host's pairing rules applied).
    Judged(Judgement),
    /// The rule failed: the candidate stays pending with this reason.
    Failed(String),
    /// Ctrl-C during an extra sample: the evaluation was abandoned.
    Interrupted,
}

impl Engine<'_> {
    /// Asks the verdict rule about `candidate` against `bar` (over `scope`: the evaluation it
    /// is confined to, and the paired one), measuring the pairs it asks for in `running`.
    pub(crate) fn judge_measuring(
        &self,
        campaign: &Campaign,
        running: &mut Running,
        candidate: CandidateId,
        bar: Option<CandidateId>,
        scope: (Option<EvaluationId>, Option<EvaluationId>),
        cancel: &CancelToken,
    ) -> Result<Ruled> {
        // The first look is the campaign's `repeats`, whatever this evaluation adds to the case
        // (a `tally candidate remeasure` may ask for fewer or more pairs).
        let repeats = self.settings.repeats();
        let mut can_measure = running.is_paired() && !running.failed;
        let mut held: Option<String> = None;
        let mut extra = 0u32;
        loop {
            let sampling = Sampling {
                repeats,
                can_measure,
            };
            let more = match self.assess(campaign, candidate, bar, scope, &sampling)? {
                Asked::Judged(mut judgement) => {
                    if let Some(why) = held {
                        judgement
                            .reason
                            .push_str(&format!("; extra pairs held: {why}"));
                    }
                    return Ok(Ruled::Judged(judgement));
                }
                Asked::Failed(why) => return Ok(Ruled::Failed(why)),
                Asked::More(more) => more,
            };
            extra = extra.saturating_add(more.pairs);
            if extra > EXTRA_PAIRS_LIMIT {
                can_measure = false;
                continue;
            }
            self.observer.note(&format!("{candidate}: {}", more.reason));
            // The budget is asked before each extra sample, as before each evaluation.
            let mut gate = || -> Result<Option<String>> {
                Ok(match self.stop_decision_at(campaign, true)? {
                    StopDecision::Go => None,
                    StopDecision::Hold(why) | StopDecision::Stop(why) => Some(why),
                })
            };
            match self.run_samples(campaign, running, more.pairs, cancel, &mut gate)? {
                SamplesEnd::Done => {}
                SamplesEnd::Failed => can_measure = false,
                SamplesEnd::Held(why) => {
                    can_measure = false;
                    held = Some(why);
                }
                SamplesEnd::Interrupted => return Ok(Ruled::Interrupted),
            }
        }
    }
}
