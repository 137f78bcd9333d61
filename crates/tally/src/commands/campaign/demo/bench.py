"""A toy LLM inference server and its benchmark: the workload of `tally demo`.

A two-layer "model" decodes a batch of requests token by token with matrix-vector products in
pure Python. It is slow on purpose, so that changes to this code change its speed for real.
Prints METRIC lines: throughput (generated tokens per second) and request latency percentiles.
Times are this process's CPU time (`time.process_time`), not wall time: the demo runs on shared
machines, where waiting for other programs would drown the effect of the code in noise; what
the code itself costs is what a change to it changes.
"""
import math
import random
import time

HIDDEN = 40        # hidden size
LAYERS = 2         # layers per step
REQUESTS = 12      # requests in the workload
PROMPT = 8         # prompt tokens per request
NEW_TOKENS = 8     # tokens generated per request
BATCH = 4          # requests decoded together


def make_weights(seed=0):
    rng = random.Random(seed)
    return [
        [[rng.uniform(-0.2, 0.2) for _ in range(HIDDEN)] for _ in range(HIDDEN)]
        for _ in range(LAYERS)
    ]


def matvec(matrix, x):
    return [sum(w * v for w, v in zip(row, x)) for row in matrix]


def layer_step(weights, x):
    for matrix in weights:
        x = [math.tanh(v) for v in matvec(matrix, x)]
    return x


def decode(weights, prompt):
    """Generates NEW_TOKENS tokens. Every step runs the model over the whole sequence again."""
    tokens = list(prompt)
    for _ in range(NEW_TOKENS):
        state = [0.0] * HIDDEN
        for token in tokens:
            state = layer_step(weights, [s + token * 0.01 for s in state])
        tokens.append(int(abs(state[0]) * 1000) % 97)
    return tokens[len(prompt):]


def main():
    weights = make_weights()
    rng = random.Random(1)
    prompts = [[rng.randrange(97) for _ in range(PROMPT)] for _ in range(REQUESTS)]
    start = time.process_time()
    latencies = []
    generated = 0
    for first in range(0, REQUESTS, BATCH):
        for prompt in prompts[first:first + BATCH]:
            generated += len(decode(weights, prompt))
        done = time.process_time() - start
        latencies.extend([done * 1000.0] * len(prompts[first:first + BATCH]))
    elapsed = time.process_time() - start
    latencies.sort()
    p50 = latencies[len(latencies) // 2]
    p95 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))]
    print(f"METRIC tokens_per_s={generated / elapsed:.3f}")
    print(f"METRIC p50_ms={p50:.3f}")
    print(f"METRIC p95_ms={p95:.3f}")


if __name__ == "__main__":
    main()
