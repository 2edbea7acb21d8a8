"""FastMultiHeadAttention returns nans on the timed size, at once: the difference from the kit's output
is then nan, which a running maximum (max(0.0, nan) is 0.0) once took for no difference at all, and the
fastest layer there is won the race."""
MODULE = "modern"
STAGES = [8]
TIMEOUT = 10
LOSES = ["s8.fast.speed"]
MENTIONS = "speed counts only for correct outputs"


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        if x.shape[1] != 2048 or self.training:
            return super().forward(x)
        return torch.full_like(x, float("nan"))
