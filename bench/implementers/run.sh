#!/bin/sh
# Engine overhead of an implementer run: the wall time `tally run --until-idle` adds when the
# candidate comes from an implementer rather than from `tally candidate add`. Each round, in a
# fresh repository with a no-op evaluate command, it times (a) queueing one commit by hand and
# judging it, and (b) an idea whose agent makes the same commit at once, launched, collected,
# queued and judged; the overhead is (b) − (a), whose work differs only by the launch: the
# worktree, the brief, the agent's process, collecting, pinning and removing the worktree.
# Prints each round and the median. Usage: bench/implementers/run.sh [TALLY_BINARY] [ROUNDS]
set -eu
tally=${1:-target/release/tally}
rounds=${2:-5}
tally=$(cd "$(dirname "$tally")" && pwd)/$(basename "$tally")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export XDG_CACHE_HOME="$scratch/cache"
unset TALLY_DATABASE_URL
now() { date +%s.%N; }

setup() {
    repo="$scratch/repo-$1"
    mkdir -p "$repo" && cd "$repo"
    git init -q -b main && git config user.name bench && git config user.email bench@x.invalid
    cat > tally.toml <<'TOML'
name = "overhead"
evaluate = ["sh", "-c", "echo METRIC score=$(cat score)"]
[[metrics]]
name = "score"
direction = "higher"
role = "primary"
[implementer]
command = ["sh", "agent.sh"]
TOML
    printf 'echo 2 > score && git commit -qam agent\n' > agent.sh
    echo 1 > score
    git add -A && git commit -qm base
    "$tally" init >/dev/null 2>&1
}

results=""
i=1
while [ "$i" -le "$rounds" ]; do
    setup "hand-$i"
    echo 2 > score && git commit -qam hand
    "$tally" candidate add HEAD >/dev/null
    t0=$(now); "$tally" run --until-idle >/dev/null 2>&1; t1=$(now)
    hand=$(echo "$t1 - $t0" | bc)
    setup "agent-$i"
    "$tally" idea add "score 2" --attempts 1 >/dev/null
    t0=$(now); "$tally" run --until-idle >/dev/null 2>&1; t1=$(now)
    agent=$(echo "$t1 - $t0" | bc)
    ! "$tally" status --json | grep -q '"verdict": *"pending"' || { echo "round $i: the agent's commit was not judged" >&2; exit 1; }
    [ "$("$tally" status --json | grep -o '"verdict"' | wc -l)" -ge 2 ] || { echo "round $i: no candidate from the agent" >&2; exit 1; }
    over=$(echo "$agent - $hand" | bc)
    printf 'round %d: by hand %.3f s, by implementer %.3f s, overhead %.3f s\n' "$i" "$hand" "$agent" "$over"
    results="$results $over"
    i=$((i + 1))
done
median=$(printf '%s\n' $results | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
printf 'median overhead of an implementer run: %.3f s (target < 1 s)\n' "$median"
