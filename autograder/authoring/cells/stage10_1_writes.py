"""## Your model writes

The kit trained a tiny GPT (2 layers, 64 wide, 4 heads, one character per token) on text that
repeats: a word, again and again. Its weights load into *your* `GPTModel`, and your
`generate_greedy` writes with them. Then the same with your `CachedGPTModel` and `generate_cached`:
the same text, and the time each takes per token.
"""
import os
import sys
import time
import torch
sys.path.insert(0, "tests")  # the public checks' folder holds the tiny model and the drawing helpers
import tiny_gpt
from attention_lab.gpt import CachedGPTModel, GPTModel, generate_cached, generate_greedy, train_steps

try:
    prompt, context = tiny_gpt.encode(tiny_gpt.SAMPLE), tiny_gpt.CONFIG["context_length"]
    for name, build, loop in (("without a cache", GPTModel, generate_greedy),
                              ("with a KV cache", CachedGPTModel, generate_cached)):
        model = build(tiny_gpt.CONFIG)
        model.load_state_dict(tiny_gpt.weights())
        model.eval()
        start = time.perf_counter()
        written = loop(model, prompt, 30, context)
        per_token = (time.perf_counter() - start) / 30 * 1000
        print(f"{name}: {tiny_gpt.decode(written)!r} ({per_token:.1f} ms per token)")
except NotImplementedError as exc:
    print(f"Not written yet ({exc!r}): fill in the code above, run its cell, then run this one again.")
