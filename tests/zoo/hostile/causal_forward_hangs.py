"""CausalAttention.forward loops for ever. It costs the checks that call CausalAttention (stage 3's
layer checks, and those that run stage 4's wrapper, whose heads are CausalAttention), and no others:
stage 3's mask functions and all of stage 4's MultiHeadAttention keep their points (they once lost
them too, when strikes were counted per stage)."""
MODULE = "causal"
STAGES = [3, 4]
LOSES = ["s3.causal.*", "s4.wrapper.seeded", "s4.wrapper.known_weights", "s4.wrapper.shapes"]
MENTIONS = "timed out"
TIMEOUT = 1  # it waits out every limit it meets: a shorter one shows the same, sooner
BOUND = 90


class CausalAttention(CausalAttention):
    def forward(self, x):
        while True:
            pass
