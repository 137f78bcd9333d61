#!/usr/bin/env python3
"""A verdict rule for tally's exec protocol: keep when the primary's mean beats the bar's by at
least `threshold` (a fraction), discard otherwise; it answers every case."""
import json
import sys

request = json.load(sys.stdin)
method, params, case = request["method"], request["params"], request["input"]

if method == "describe":
    result = {
        "name": "relative_gain",
        "doc": "keeps a candidate whose mean beats the bar's by a threshold",
        "params": [{"name": "threshold", "kind": "number", "required": True,
                    "doc": "the smallest relative gain kept, as a fraction"}],
    }
elif method == "decide":
    name, direction = case["primary"]["name"], case["primary"]["direction"]
    cand, bar = case["candidate"]["means"].get(name), case["bar"]["means"].get(name)
    if cand is None:
        result = {"outcome": "crash", "reason": "no successful measurement"}
    elif bar is None:
        result = {"outcome": "keep", "reason": f"candidate#{case['bar']['id']} has no score"}
    else:
        gain = (cand - bar) if direction == "higher" else (bar - cand)
        relative = gain / abs(bar) if bar else gain
        outcome = "keep" if relative >= params["threshold"] else "discard"
        result = {"outcome": outcome,
                  "reason": f"{name} {relative:+.1%} against candidate#{case['bar']['id']}"}
else:
    json.dump({"error": f"unknown method {method}"}, sys.stdout)
    sys.exit(0)
json.dump({"ok": result}, sys.stdout)
