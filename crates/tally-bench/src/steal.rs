//! The hypervisor's steal time: CPU time this machine's virtual CPUs wanted and the host gave
//! to other work (the `steal` column of `/proc/stat`'s `cpu` line, all CPUs together). On a
//! shared virtual machine a run's lateness can be the host's rather than the client's; the run
//! reports how much was stolen while it measured (docs/bench.md#exit-4).

/// `/proc/stat` counts in USER_HZ ticks, 1/100 s on every Linux architecture (its ABI).
const MS_PER_TICK: f64 = 10.0;

/// The steal column of a `/proc/stat` text, in ms; `None` without a `cpu` line or the column.
pub fn parse_steal_ms(proc_stat: &str) -> Option<f64> {
    let line = proc_stat.lines().find(|l| l.starts_with("cpu "))?;
    // cpu user nice system idle iowait irq softirq steal …
    let ticks: u64 = line.split_whitespace().nth(8)?.parse().ok()?;
    Some(ticks as f64 * MS_PER_TICK)
}

/// The machine's steal time so far, ms (`None` where there is no `/proc/stat`).
pub fn steal_ms_now() -> Option<f64> {
    parse_steal_ms(&std::fs::read_to_string("/proc/stat").ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_steal_column_of_the_all_cpu_line() {
        let text = "cpu  8009 83979 13914 76220 518 0 2089 754 0 0\n\
                    cpu0 4000 40000 7000 38000 250 0 1000 377 0 0\n";
        assert_eq!(parse_steal_ms(text), Some(7540.0));
        assert_eq!(parse_steal_ms("cpu0 1 2 3 4 5 6 7 8\n"), None);
        assert_eq!(parse_steal_ms("cpu  1 2 3 4\n"), None);
    }
}
