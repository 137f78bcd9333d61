//! The trailers an agent puts in a commit message to steer its scoring
//! (`docs/implementers.md#trailers`): `Tally-Eval: skip` (the commit is not measured) and
//! `Tally-Note: <why>` (a discard or interesting verdict becomes `interesting` with the note as
//! its reason); piloop's `Piloop-Eval` and `Piloop-Note` are the same. They are read from the
//! message's trailer block — its last paragraph, when that is not the subject — on any line of
//! it, names case-insensitive; the last of a name wins.

/// What a commit message's trailers ask.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Steering {
    /// `Tally-Eval: skip`.
    pub skip: bool,
    /// `Tally-Note: <why>`, trimmed, when not empty.
    pub note: Option<String>,
}

/// The prefix of the run-commit note of a queued commit that carries a `Tally-Note`; the note
/// follows it.
pub const NOTED: &str = "queued; Tally-Note: ";

/// The reason of a commit skipped by its trailer.
pub const SKIPPED: &str = "skipped: Tally-Eval: skip";

/// Reads the trailers of a commit `message`.
pub fn parse(message: &str) -> Steering {
    let paragraphs: Vec<&str> = message
        .trim()
        .split("\n\n")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let mut steering = Steering::default();
    if paragraphs.len() < 2 {
        return steering;
    }
    let block = paragraphs[paragraphs.len() - 1];
    for line in block.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        match name.as_str() {
            "tally-eval" | "piloop-eval" => steering.skip = value.eq_ignore_ascii_case("skip"),
            "tally-note" | "piloop-note" if !value.is_empty() => {
                steering.note = Some(value.to_string());
            }
            _ => {}
        }
    }
    steering
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailers_are_read_on_any_line_of_the_last_paragraph() {
        let s = parse(
            "faster batching\n\nbody text: with a colon\n\nSigned-off-by: a <a@b>\ntally-eval: Skip\nPiloop-Note: tail latency improved\n",
        );
        assert_eq!(
            s,
            Steering {
                skip: true,
                note: Some("tail latency improved".into())
            }
        );
    }

    #[test]
    fn a_subject_or_body_is_no_trailer_block() {
        assert_eq!(parse("Tally-Eval: skip"), Steering::default());
        assert_eq!(
            parse("subject\n\nTally-Eval: skip\n\nlast paragraph of prose"),
            Steering::default()
        );
        assert_eq!(parse("subject\n\nTally-Eval: later"), Steering::default());
        assert_eq!(parse("subject\n\nTally-Note:   "), Steering::default());
    }
}
