"""FastMultiHeadAttention.forward, on the timed size, computes its own output and then calls
torch.set_num_threads with another number, so that the kit's reference, timed next, runs with
other settings (more threads than cores, or fewer than it was given)."""
MODULE = "modern"
STAGES = [8]
TIMEOUT = 10
LOSES = ["s8.fast.speed"]
MENTIONS = "changed torch's number of threads"


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        out = super().forward(x)
        if x.shape[1] == 2048:
            torch.set_num_threads(8 if torch.get_num_threads() == 1 else 1)
        return out
