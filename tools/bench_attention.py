"""Time the kit's attention layers: ``python -m tools.bench_attention [--repeat N] [--device D]``.

For stage 4's ``MultiHeadAttention`` (the reference), its ``MultiHeadAttentionWrapper`` (a stack
of ``CausalAttention`` heads), stage 8's ``FastMultiHeadAttention``, ``nn.MultiheadAttention``
(through stage 4's ``MultiHeadAttentionPyTorch``), stage 8's ``GroupedQueryAttention`` and stage 9's
rotary, sliding-window and latent layers, all from ``solutions/``, it prints a Markdown table of the
median time of a forward pass (eval mode, no autograd) and of a forward plus backward pass (train
mode, dropout 0), on the CPU and on CUDA when there is one. The default size is GPT-2's attention
on a batch: 8 sequences of 1024 tokens, 768 wide, 12 heads (GQA: 4 key/value heads; stage 9: a
window of 256 tokens, a latent of 128).
Each layer is warmed up once, then timed ``--repeat`` times; the figures are wall-clock
milliseconds. Then a table of what each kind's KV cache costs per token at that size (12 layers, bf16).
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import torch

from tools.reference import reference


def layers(args):
    multihead, modern, frontier = reference("multihead", "modern", "frontier")
    d, n, h = args.width, args.tokens, args.heads
    return {
        "stage 4 `MultiHeadAttention` (reference)": lambda: multihead.MultiHeadAttention(d, d, n, 0.0, h),
        "stage 4 `MultiHeadAttentionWrapper`": lambda: multihead.MultiHeadAttentionWrapper(d, d // h, n, 0.0, h),
        "stage 8 `FastMultiHeadAttention`": lambda: modern.FastMultiHeadAttention(d, d, n, 0.0, h),
        "`nn.MultiheadAttention` (stage 4's wrapper of it)": (
            lambda: multihead.MultiHeadAttentionPyTorch(d, d, n, 0.0, h)),
        f"stage 8 `GroupedQueryAttention`, {args.kv_heads} kv heads": (
            lambda: modern.GroupedQueryAttention(d, d, n, h, args.kv_heads)),
        f"stage 9 `RopeGroupedQueryAttention`, {args.kv_heads} kv heads": (
            lambda: frontier.RopeGroupedQueryAttention(d, d, n, h, args.kv_heads)),
        f"stage 9 `SlidingWindowAttention`, window {args.window}": (
            lambda: frontier.SlidingWindowAttention(d, d, n, h, args.window)),
        f"stage 9 `MultiHeadLatentAttention`, latent {args.latent}": (
            lambda: frontier.MultiHeadLatentAttention(d, d, n, h, args.latent)),
    }


def cache_table(args):
    """Bytes of KV cache per token of context, for each kind at the same model size (``--layers`` of
    this width and these heads, ``--tokens`` of context, bf16): what the cache costs, from the
    reference's ``kv_cache_bytes``."""
    frontier, = reference("frontier")
    d, h, n = args.width, args.heads, args.tokens
    kinds = {"MHA": ("mha", {}), f"GQA, {args.kv_heads} kv heads": ("gqa", {"n_kv_heads": args.kv_heads}),
             f"MLA, latent {args.latent}": ("mla", {"latent_dim": args.latent}),
             f"SWA, window {args.window}": ("swa", {"window": args.window})}
    print(f"\nKV cache per token of context: {args.layers} layers, {d} wide, {h} heads, {n} tokens of context, "
          "bf16\n")
    print("| cache | bytes per token | of MHA's |")
    print("| --- | ---: | ---: |")
    full = frontier.kv_cache_bytes("mha", 1, n, args.layers, d, h) / n
    for name, (kind, extra) in kinds.items():
        per_token = frontier.kv_cache_bytes(kind, 1, n, args.layers, d, h, **extra) / n
        print(f"| {name} | {per_token:,.0f} | {per_token / full:.1%} |")


def median_ms(run, repeat, device):
    def once():
        start = time.perf_counter()
        run()
        if device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - start

    once()  # warm-up: allocations, kernel choice
    return statistics.median(once() for _ in range(repeat)) * 1e3


def output(result):
    return result[0] if isinstance(result, tuple) else result  # GQA returns (out, cache)


def measure(make, x, repeat, device):
    module = make().to(device, x.dtype)

    def forward():
        with torch.no_grad():
            output(module.eval()(x))

    def forward_backward():
        module.train()
        module.zero_grad(set_to_none=True)
        output(module(x)).square().mean().backward()

    return median_ms(forward, repeat, device), median_ms(forward_backward, repeat, device)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--kv-heads", type=int, default=4)
    parser.add_argument("--window", type=int, default=256, help="stage 9's sliding window")
    parser.add_argument("--latent", type=int, default=128, help="stage 9's latent width")
    parser.add_argument("--layers", type=int, default=12, help="layers of the model whose cache is counted")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                        help="of the weights and inputs (bfloat16: where current models run, and the fused "
                             "kernels' type)")
    parser.add_argument("--device", action="append", choices=["cpu", "cuda"],
                        help="where to time (repeatable; default: cpu, and cuda when present)")
    args = parser.parse_args(argv)
    devices = args.device or ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    if "cuda" in devices and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device here")
    print(f"torch {torch.__version__}, Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads"
          + (f", {torch.cuda.get_device_name()}" if "cuda" in devices else ""))
    print(f"batch {args.batch}, {args.tokens} tokens, {args.width} wide, {args.heads} heads, {args.dtype}, "
          f"median of {args.repeat} after one warm-up, milliseconds\n")
    print("| layer | device | forward | forward + backward | forward speed-up over stage 4 |")
    print("| --- | --- | ---: | ---: | ---: |")
    for device in devices:
        x = torch.randn(args.batch, args.tokens, args.width, generator=torch.Generator().manual_seed(0))
        x = x.to(device, getattr(torch, args.dtype))
        base = None
        for name, make in layers(args).items():
            fwd, both = measure(make, x, args.repeat, device)
            base = base or fwd
            print(f"| {name} | {device} | {fwd:.1f} | {both:.1f} | {base / fwd:.2f}x |", flush=True)
    cache_table(args)


if __name__ == "__main__":
    main()
