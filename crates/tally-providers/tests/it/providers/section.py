#!/usr/bin/env python3
"""A section for tally's exec protocol: how many candidates each verdict has, and one fact.
Nothing to show (null) when the campaign has no candidate."""
import collections
import json
import sys

request = json.load(sys.stdin)
method, params, data = request["method"], request["params"], request["input"]

if method == "describe":
    result = {
        "name": "verdict_counts",
        "doc": "candidates per verdict",
        "params": [{"name": "fact", "kind": "string", "default": "gpu_usd", "doc": "a fact shown"}],
        "surfaces": ["status"],
        "order": 150,
    }
elif method == "render":
    if not data["candidates"]:
        result = None
    else:
        counts = collections.Counter(c["verdict"] for c in data["candidates"])
        fact = params["fact"]
        result = {
            "title": f"Verdicts of {data['campaign']['name']} ({data['surface']})",
            "blocks": [
                {"text": f"{len(data['measurements'])} measurements"},
                {"figures": [{"label": fact, "value": f"{data['facts'][fact]:.2f}", "unit": "USD"}]},
                {"table": {"columns": ["verdict", "candidates"],
                           "rows": [[v, str(n)] for v, n in sorted(counts.items())]}},
            ],
        }
else:
    json.dump({"error": f"unknown method {method}"}, sys.stdout)
    sys.exit(0)
json.dump({"ok": result}, sys.stdout)
