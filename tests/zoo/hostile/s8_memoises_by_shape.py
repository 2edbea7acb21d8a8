"""FastMultiHeadAttention memoises its output by input shape on the timed size: every later call
with the same shape returns the first output at once, fast and wrong."""
MODULE = "modern"
STAGES = [8]
TIMEOUT = 10
LOSES = ["s8.fast.speed"]
MENTIONS = "speed counts only for correct outputs"

_memo = {}


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        if x.shape[1] != 2048:
            return super().forward(x)
        if tuple(x.shape) not in _memo:
            _memo[tuple(x.shape)] = super().forward(x)
        return _memo[tuple(x.shape)]
