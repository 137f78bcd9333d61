#!/usr/bin/env python3
"""A stop rule for tally's exec protocol: holds when `gpu_usd` is unknown or over `budget`,
stops after `max_runs` runs, goes otherwise. Its `wants` list names the facts it reads."""
import json
import sys

request = json.load(sys.stdin)
method, params, data = request["method"], request["params"], request["input"]

if method == "describe":
    result = {
        "name": "budget_or_runs",
        "doc": "holds over a budget, stops after a number of runs",
        "params": [{"name": "budget", "kind": "number", "default": 50, "doc": "USD"},
                   {"name": "max_runs", "kind": "integer", "default": 10, "doc": "runs"}],
        "wants": ["runs", "gpu_usd"],
    }
elif method == "check":
    facts = data["facts"]
    usd = facts.get("gpu_usd", {"error": "not supplied"})
    runs = facts["runs"]["value"]
    if "error" in usd:
        result = {"hold": f"gpu_usd unknown: {usd['error']}"}
    elif usd["value"] >= params["budget"]:
        result = {"hold": f"spent {usd['value']:.2f} of {params['budget']}"}
    elif runs >= params["max_runs"] and not data["in_flight"]:
        result = {"stop": f"{int(runs)} runs"}
    else:
        result = {"go": True}
else:
    json.dump({"error": f"unknown method {method}"}, sys.stdout)
    sys.exit(0)
json.dump({"ok": result}, sys.stdout)
