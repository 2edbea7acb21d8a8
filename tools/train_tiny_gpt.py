"""Train the kit's tiny GPT of stage 10 again: ``python -m tools.train_tiny_gpt [--steps N] [--check]``.

The model is the reference's ``GPTModel`` (``solutions/``) with ``tiny_gpt.CONFIG``; the task is
``tiny_gpt.task_batch`` (text that repeats: no download, nothing read from the disk). One thread and
a fixed seed, so that the same torch on the same kind of machine writes the same file. It writes
``autograder/public/tiny_gpt.pt`` (float16: the file stays small, and the model is the one stored,
float16 values read back as float32) and records the file's hash in ``tiny_gpt.WEIGHTS_SHA256``,
which the build holds. ``--check`` trains without writing and says how well the result copies.
"""
from __future__ import annotations

import argparse
import re
import sys
import time

import torch

from autograder.paths import KIT_ROOT
from autograder.public import tiny_gpt
from tools.reference import reference

SEED = 2026
BATCH = 32
LEARNING_RATE = 3e-3


def copy_accuracy(model, seed=99, batch=64) -> float:
    """How often the model predicts a character of the second time through a run and later, which
    can be known (held-out samples, another seed than training's)."""
    inputs, targets = tiny_gpt.task_batch(batch, seed)
    knowable = torch.zeros_like(targets, dtype=torch.bool)
    knowable[:, tiny_gpt.PERIODS[1]:] = True  # past the longest run, every target has been seen before
    with torch.no_grad():
        predicted = model(inputs).argmax(-1)
    return float((predicted == targets)[knowable].float().mean())


def train(steps: int, log=print):
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    gpt, = reference("gpt")
    model = gpt.GPTModel(tiny_gpt.CONFIG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.01)
    start = time.perf_counter()
    for step in range(0, steps, 100):
        batches = [tiny_gpt.task_batch(BATCH, seed=SEED + step + i) for i in range(min(100, steps - step))]
        losses = gpt.train_steps(model, batches, optimizer, len(batches))
        log(f"step {step + len(batches):5d}: loss {sum(losses) / len(losses):.3f}, "
            f"copies {copy_accuracy(model):.1%} ({time.perf_counter() - start:.0f} s)")
    return model


def save(model):
    stored = {name: t.detach().to(torch.float16) for name, t in model.state_dict().items()}
    torch.save(stored, tiny_gpt.WEIGHTS)
    source = KIT_ROOT / "autograder" / "public" / "tiny_gpt.py"
    text = re.sub(r'^WEIGHTS_SHA256 = ".*"$', f'WEIGHTS_SHA256 = "{tiny_gpt.weights_digest()}"',
                  source.read_text(), count=1, flags=re.M)
    source.write_text(text)
    return tiny_gpt.WEIGHTS.stat().st_size


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--check", action="store_true", help="train, measure, write nothing")
    args = parser.parse_args(argv)
    model = train(args.steps).eval()
    gpt, = reference("gpt")
    prompt = tiny_gpt.encode(tiny_gpt.SAMPLE)
    print("writes:", repr(tiny_gpt.decode(gpt.generate_greedy(model, prompt, 24, tiny_gpt.CONFIG["context_length"]))))
    if not args.check:
        size = save(model)
        print(f"wrote {tiny_gpt.WEIGHTS.relative_to(KIT_ROOT)} ({size / 1024:.0f} KiB); run `attention-lab build` "
              "to copy it beside the public checks and to compute the golden data again")
    return 0


if __name__ == "__main__":
    sys.exit(main())
