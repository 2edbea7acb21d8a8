"""CausalAttention.forward calls os._exit(0): every call ends the process with exit code 0."""
MODULE = "causal"
LOSES = ["s3.causal.*"]
MENTIONS = "exited (code 0) while this check ran"
BOUND = 40

import os


class CausalAttention(CausalAttention):
    def forward(self, x):
        os._exit(0)
