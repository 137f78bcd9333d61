#!/usr/bin/env python3
"""A provider that misbehaves on purpose, for tally's tests: `describe` answers properly (so it
can be built) unless the mode is `describe-fails`; every other call does what the mode says."""
import json
import os
import signal
import sys
import time

mode = sys.argv[1]
request = json.load(sys.stdin)
method = request["method"]

if method == "describe":
    if mode == "describe-fails":
        print("no such model: gpt-17", file=sys.stderr)
        sys.exit(2)
    if mode == "describe-typo":
        json.dump({"ok": {"name": "typo", "doc": "misspells wants", "want": ["runs"]}}, sys.stdout)
        sys.exit(0)
    params = []
    if mode == "required-param":
        params = [{"name": "threshold", "kind": "number", "required": True, "doc": "a fraction"}]
    json.dump({"ok": {"name": f"misbehave-{mode}", "doc": "misbehaves", "params": params,
                      "facts": [{"name": "x", "unit": "", "doc": "x"}], "projects": ["x"],
                      "wants": ["runs"]}}, sys.stdout)
    sys.exit(0)

if mode == "exit":
    print("loading weights", file=sys.stderr)
    print("Traceback: ZeroDivisionError: division by zero", file=sys.stderr)
    sys.exit(3)
elif mode == "timeout":
    print("thinking...", file=sys.stderr, flush=True)
    time.sleep(30)
elif mode == "signal":
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "nonsense":
    print("hello, tally! the answer is 42")
elif mode == "silent":
    pass
elif mode == "envelope":
    json.dump({"result": 1}, sys.stdout)
elif mode == "error":
    json.dump({"error": "threshold must be positive"}, sys.stdout)
elif mode == "wrong-shape":
    json.dump({"ok": {
        "decide": {"verdict": "keep"},
        "check": {"continue": True},
        "gather": {"x": "lots"},
        "project": "soon",
        "render": {"title": "T", "blocks": [{"table": {"columns": ["a", "b"], "rows": [["1"]]}}]},
    }[method]}, sys.stdout)
elif mode == "pending":
    json.dump({"ok": {"outcome": "pending", "reason": "not sure"}}, sys.stdout)
else:
    sys.exit(f"unknown mode {mode}")
