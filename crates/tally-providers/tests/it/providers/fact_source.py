#!/usr/bin/env python3
"""A fact source for tally's exec protocol: `spot_usd`, the campaign's seconds priced at a spot
rate, with a projection of the next evaluation (a fixed guess)."""
import json
import sys


def answer(result):
    json.dump({"ok": result}, sys.stdout)


request = json.load(sys.stdin)
assert request["protocol"] == 1 and request["capability"] == "fact_source", request
method, params, data = request["method"], request["params"], request["input"]

if method == "describe":
    answer({
        "name": "spot_price",
        "doc": "the campaign's evaluation time priced at a spot rate",
        "params": [{"name": "usd_per_hour", "kind": "number", "default": 3.0,
                    "doc": "spot price of one GPU-hour"}],
        "facts": [{"name": "spot_usd", "unit": "USD", "doc": "evaluation time at the spot price"}],
        "projects": ["spot_usd"],
    })
elif method == "gather":
    seconds = sum(m["seconds"] or 0 for m in data["measurements"])
    facts = {"spot_usd": seconds / 3600 * params["usd_per_hour"], "now_seen": data["now"]}
    answer({name: facts[name] for name in data["wanted"] if name in facts})
elif method == "project":
    answer(12.5 if data["fact"] == "spot_usd" else None)
else:
    json.dump({"error": f"unknown method {method}"}, sys.stdout)
