"""Golden data: what the reference solution's probes return, stored once, judged against.

Built by ``attention-lab build`` from ``solutions/`` (on the CPU), committed, and checked for
drift by the test suite. Only deterministic probes (``golden=True``) are stored.
"""
from __future__ import annotations

import io
from functools import lru_cache
from pathlib import Path

import torch

from ..public.feedback import is_error_record

GOLDEN_PATH = Path(__file__).with_name("golden") / "golden.pt"


def compute_golden(solutions: Path):
    from .. import probes
    from ..intake.submission import open_submission
    from ..sandbox.protocol import Task
    from ..sandbox.runner import run_tasks

    tasks = [Task("probe", name, "cpu") for name, p in sorted(probes.load().items()) if p.golden]
    observations = run_tasks(open_submission(solutions), tasks).observations
    golden = {task.name: obs for task, obs in observations.items()}
    failed = [name for name, obs in golden.items() if _has_error(obs)]
    if failed:
        raise RuntimeError(f"the reference failed probes {failed}: {[golden[n] for n in failed]}")
    return golden


def _has_error(obs):
    if isinstance(obs, dict):
        return is_error_record(obs) or any(_has_error(v) for v in obs.values())
    if isinstance(obs, list):
        return any(_has_error(v) for v in obs)
    return False


def serialize(golden) -> bytes:
    buf = io.BytesIO()
    torch.save(golden, buf)
    return buf.getvalue()


@lru_cache(maxsize=1)
def load_golden():
    if not GOLDEN_PATH.exists():
        raise FileNotFoundError(f"{GOLDEN_PATH} is missing; run `attention-lab build` in the kit's checkout")
    return torch.load(GOLDEN_PATH, weights_only=True)
