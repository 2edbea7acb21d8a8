"""CausalAttention.forward sleeps for 1000 s (no CPU used, so only a wall-clock limit stops it)."""
MODULE = "causal"
LOSES = ["s3.causal.*"]
MENTIONS = "timed out after 1 s"
TIMEOUT = 1  # it waits out every limit it meets: a shorter one shows the same, sooner
BOUND = 40

import time


class CausalAttention(CausalAttention):
    def forward(self, x):
        time.sleep(1000)
