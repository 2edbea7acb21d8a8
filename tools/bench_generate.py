"""Time stage 10's two generation loops: ``python -m tools.bench_generate [--repeat N] [--device D]``.

The reference's ``generate_greedy`` (every step runs the model on every token so far) against its
``generate_cached`` (a prefill, then one token per step with the KV cache), on the same model and
prompt, in turns. It prints the median milliseconds per new token of each, for the kit's tiny model
(2 layers, 64 wide, its 64-token context) and for a larger one (4 layers, 256 wide, 8 heads, a
prompt of 32 tokens and 448 new ones in a context of 512), where the difference grows with the
length. Both loops must write the same tokens; the script says so, or stops.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from autograder.public import tiny_gpt
from tools.reference import reference

SIZES = {
    "tiny (the kit's trained model)": (tiny_gpt.CONFIG, 27, 37),
    "4 layers, 256 wide, 8 heads": ({**tiny_gpt.CONFIG, "context_length": 512, "emb_dim": 256, "n_heads": 8,
                                     "n_layers": 4}, 32, 448),
}


def timed(loop, model, prompt, new, context, device):
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    out = loop(model, prompt, new, context)
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / new * 1000, out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    gpt, = reference("gpt")
    print(f"torch {torch.__version__}, {args.device}, {torch.get_num_threads()} threads, median of {args.repeat}\n")
    print("| model | prompt + new tokens | without a cache (ms/token) | with a KV cache (ms/token) | speed-up |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name, (cfg, prompt_length, new) in SIZES.items():
        torch.manual_seed(0)
        plain, cached = gpt.GPTModel(cfg), gpt.CachedGPTModel(cfg)
        if cfg is tiny_gpt.CONFIG:
            plain.load_state_dict(tiny_gpt.weights())
        cached.load_state_dict(plain.state_dict())
        plain, cached = plain.to(args.device).eval(), cached.to(args.device).eval()
        prompt = tiny_gpt.repeats(1, seed=7, length=prompt_length).to(args.device)
        times = {"plain": [], "cached": []}
        for _ in range(args.repeat + 1):  # the first round warms up, and is not counted
            ms, a = timed(gpt.generate_greedy, plain, prompt, new, cfg["context_length"], args.device)
            times["plain"].append(ms)
            ms, b = timed(gpt.generate_cached, cached, prompt, new, cfg["context_length"], args.device)
            times["cached"].append(ms)
            if not torch.equal(a, b):
                raise SystemExit(f"{name}: the two loops wrote different tokens")
        p, c = (statistics.median(times[k][1:]) for k in ("plain", "cached"))
        print(f"| {name} | {prompt_length} + {new} | {p:.2f} | {c:.2f} | {p / c:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
