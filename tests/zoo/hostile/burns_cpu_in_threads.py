"""softmax_naive keeps several threads busy with large matrix products (torch releases the GIL),
burning CPU faster than the wall clock runs; the CPU limit is lowered so it stops this first."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "s of CPU time"
LIMITS = {"CPU_PER_WALL": 0.2}

import threading


def _burn():
    a = torch.rand(400, 400)
    while True:
        a = (a @ a).clamp(-1, 1)


def softmax_naive(scores):
    for _ in range(4):
        threading.Thread(target=_burn, daemon=True).start()
    _burn()
