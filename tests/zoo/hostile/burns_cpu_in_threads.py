"""kv_cache_bytes keeps several threads busy with large matrix products (torch releases the GIL),
burning CPU faster than the wall clock runs; the CPU limit is lowered so it stops this first. (In stage
9, which may run threads; in a stage written by hand, none would start.)"""
MODULE = "frontier"
STAGES = [9]
LOSES = ["s9.cost", "s9.cost.errors"]
MENTIONS = "s of CPU time"
LIMITS = {"CPU_PER_WALL": 0.2}

import threading


def _burn():
    a = torch.rand(400, 400)
    while True:
        a = (a @ a).clamp(-1, 1)


def kv_cache_bytes(*args, **kwargs):
    for _ in range(4):
        threading.Thread(target=_burn, daemon=True).start()
    _burn()
