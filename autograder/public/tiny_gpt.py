"""The kit's tiny trained GPT (stage 10): its alphabet, its configuration, its weights, and the task
it learned.

The task: text that repeats. Each sample is one random word of 5 to 19 different letters and a
space, written again and again until the context is full. The first time through nothing can be
predicted; from the second time on, every character can, by finding where the current character
stood before and copying what came after it (the letters of a word are all different, so there is
one such place). Two layers of attention are what that takes: a head in the first layer that looks
at the previous token, and an *induction head* in the second that looks for the token after the
earlier copy of the current one.

``python -m tools.train_tiny_gpt`` trains the weights (``tiny_gpt.pt`` beside this file) again; the
build holds the file's hash (``WEIGHTS_SHA256``), so a retrained file is a change someone made on purpose.

Only torch and the standard library here: the build copies this file, and the weights, beside the
public checks.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import torch

ALPHABET = " abcdefghijklmnopqrstuvwxyz"  # token i is ALPHABET[i]: a space, then a to z
CONFIG = {
    "vocab_size": len(ALPHABET),
    "context_length": 64,
    "emb_dim": 64,
    "n_heads": 4,
    "n_layers": 2,
    "drop_rate": 0.0,
    "qkv_bias": False,
}
WEIGHTS = Path(__file__).with_name("tiny_gpt.pt")
WEIGHTS_SHA256 = "f22186a9f1693d4a958033c5a3f8bfd775afe7cd237c92e26b3ac387e14fa19f"
PERIODS = (6, 20)  # the shortest and longest repeated run of the task: a word and its space
SAMPLE = "lumberjacks lumberjacks lum"  # the demo prompt: a word of different letters, twice, and its start


def encode(text: str) -> torch.Tensor:
    """Token ids of ``text``, (1, len(text)); a character outside the alphabet is a ValueError."""
    unknown = sorted(set(text) - set(ALPHABET))
    if unknown:
        raise ValueError(f"the tiny model knows only {ALPHABET!r}; not {''.join(unknown)!r}")
    return torch.tensor([[ALPHABET.index(c) for c in text]])


def decode(ids: torch.Tensor | list[int]) -> str:
    """The text of token ids: a (1, n) or (n,) tensor, or a list of ints."""
    if isinstance(ids, torch.Tensor):
        ids = ids.reshape(-1).tolist()
    return "".join(ALPHABET[i] for i in ids)


def weights() -> dict[str, torch.Tensor]:
    """The trained ``state_dict`` (float32), to load with ``model.load_state_dict(weights())``."""
    stored = torch.load(WEIGHTS, map_location="cpu", weights_only=True)
    return {name: t.float() for name, t in stored.items()}


def weights_digest() -> str:
    return hashlib.sha256(WEIGHTS.read_bytes()).hexdigest()


def repeats(batch: int, seed: int, length: int = int(CONFIG["context_length"]) + 1) -> torch.Tensor:
    """``batch`` samples of the task, (batch, length) token ids: a word of 5 to 19 different random
    letters and a space, repeated to ``length``."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for _ in range(batch):
        period = int(torch.randint(PERIODS[0], PERIODS[1] + 1, (), generator=g))
        word = torch.randperm(26, generator=g)[:period - 1] + 1  # different letters, a..z
        run = torch.cat([word, torch.zeros(1, dtype=word.dtype)])  # and a space
        rows.append(run.repeat(length // period + 1)[:length])
    return torch.stack(rows)


def task_batch(batch: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, targets) of the task: targets are the inputs shifted by one token."""
    tokens = repeats(batch, seed)
    return tokens[:, :-1], tokens[:, 1:]
