//! Names shortened for the terminal (`docs/cli.md`, `tally trace account`): kernel names, which
//! profilers write as whole demangled C++ signatures, and iteration references, which imported
//! traces prefix with their source. Only the text report shortens; `--json` keeps every name
//! whole.

use tally_evidence::EntityRef;

/// The most characters a kernel name takes in the report.
pub const KERNEL_NAME_WIDTH: usize = 64;

/// The most characters an iteration label takes in the report (after the common prefix).
pub const ITERATION_LABEL_WIDTH: usize = 48;

/// A kernel name for the terminal: a demangled signature loses its return type and parameter
/// list (`void at::native::f<float>(int, float*)` → `at::native::f<float>`), then a name longer
/// than `width` characters keeps its first `width − 1` and ends in `…`.
///
/// A parameter list is the last `(…)` at template depth 0 that closes the name and follows a
/// character other than a space, so `Memcpy HtoD (Pageable -> Device)` stays whole; the return
/// type is what precedes the last space at template depth 0 before it.
pub fn short_kernel_name(name: &str, width: usize) -> String {
    let base = strip_signature(name).unwrap_or(name);
    truncate_end(base, width)
}

fn strip_signature(name: &str) -> Option<&str> {
    let trimmed = name.trim_end();
    if !trimmed.ends_with(')') {
        return None;
    }
    // Where the parameter list opens: the first `(` outside template arguments.
    let mut depth = 0i32;
    let mut open = None;
    let mut last_space = None;
    for (at, c) in trimmed.char_indices() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            '(' if depth == 0 => {
                open = Some(at);
                break;
            }
            ' ' if depth == 0 => last_space = Some(at),
            _ => {}
        }
    }
    let open = open?;
    if open == 0 || trimmed[..open].ends_with(' ') {
        return None;
    }
    let start = last_space.map_or(0, |at| at + 1);
    let base = &trimmed[start..open];
    (!base.is_empty()).then_some(base)
}

/// `text` when it has at most `width` characters, else its first `width − 1` and `…`.
pub fn truncate_end(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `text` when it has at most `width` characters, else `…` and its last `width − 1`.
pub fn truncate_start(text: &str, width: usize) -> String {
    let count = text.chars().count();
    if count <= width {
        return text.to_string();
    }
    let mut out = String::from("…");
    out.extend(text.chars().skip(count - width.saturating_sub(1)));
    out
}

/// Iteration references as the report shows them: whole when every one fits in
/// [`ITERATION_LABEL_WIDTH`] characters; otherwise without the prefix all of them share up to
/// its last `/` (said once, in the heading), and then at most that many characters, keeping
/// the end (`ProfilerStep#553`), where references differ.
pub struct IterationLabels {
    prefix: String,
}

impl IterationLabels {
    /// Labels for these references (every iteration of the report, not only those shown).
    pub fn new<'a>(refs: impl IntoIterator<Item = &'a EntityRef>) -> Self {
        let mut common: Option<String> = None;
        let mut longest = 0;
        for r in refs {
            let text = r.to_string();
            longest = longest.max(text.chars().count());
            common = Some(match common {
                None => text,
                Some(c) => {
                    let len = c
                        .char_indices()
                        .zip(text.chars())
                        .take_while(|((_, a), b)| a == b)
                        .last()
                        .map_or(0, |((at, a), _)| at + a.len_utf8());
                    c[..len].to_string()
                }
            });
        }
        let common = common.unwrap_or_default();
        let prefix = match common.rfind('/') {
            Some(at) if longest > ITERATION_LABEL_WIDTH => common[..=at].to_string(),
            _ => String::new(),
        };
        Self { prefix }
    }

    /// The prefix every reference shares (empty when none).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The label of one reference.
    pub fn label(&self, r: &EntityRef) -> String {
        let text = r.to_string();
        let rest = text.strip_prefix(&self.prefix).unwrap_or(&text);
        truncate_start(rest, ITERATION_LABEL_WIDTH)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_lose_return_type_and_parameters() {
        let kineto = "void at::native::unrolled_elementwise_kernel<at::native::CUDAFunctor_add<\
                      double>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<\
                      double>, at::detail::Array<char*, 3>)";
        assert_eq!(
            short_kernel_name(kineto, 200),
            "at::native::unrolled_elementwise_kernel<at::native::CUDAFunctor_add<double>, \
             at::detail::Array<char*, 3> >"
        );
        assert_eq!(short_kernel_name(kineto, 24), "at::native::unrolled_el…");
        assert_eq!(
            short_kernel_name(
                "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, ncclWork*)",
                64
            ),
            "ncclKernel_AllReduce_RING_LL_Sum_float"
        );
        for whole in [
            "Memcpy HtoD (Pageable -> Device)",
            "ampere_sgemm_128x64_nn",
            "(unnamed gpu_kernel)",
            "f()",
        ] {
            assert_eq!(short_kernel_name(whole, 64), whole.replace("f()", "f"));
        }
    }

    #[test]
    fn iteration_labels_drop_the_shared_prefix_and_keep_the_end() {
        let refs = [
            EntityRef::new(
                "tally.trace.kineto",
                "kineto:a.json.gz:4fa066a5b787/ProfilerStep#9",
            )
            .unwrap(),
            EntityRef::new(
                "tally.trace.kineto",
                "kineto:a.json.gz:4fa066a5b787/ProfilerStep#10",
            )
            .unwrap(),
        ];
        let labels = IterationLabels::new(&refs);
        assert_eq!(
            labels.prefix(),
            "tally.trace.kineto/kineto:a.json.gz:4fa066a5b787/"
        );
        assert_eq!(labels.label(&refs[1]), "ProfilerStep#10");
        // References that fit are shown whole.
        let short = [
            EntityRef::new("eng", "I1").unwrap(),
            EntityRef::new("eng", "I2").unwrap(),
        ];
        let labels = IterationLabels::new(&short);
        assert_eq!(
            (labels.prefix(), labels.label(&short[0]).as_str()),
            ("", "eng/I1")
        );

        let long = EntityRef::new("p", "x".repeat(60) + "/step").unwrap();
        let labels = IterationLabels::new([&long, &EntityRef::new("q", "1").unwrap()]);
        assert_eq!(labels.prefix(), "");
        let label = labels.label(&long);
        assert_eq!(label.chars().count(), ITERATION_LABEL_WIDTH);
        assert!(
            label.starts_with('…') && label.ends_with("xx/step"),
            "{label}"
        );
    }
}
