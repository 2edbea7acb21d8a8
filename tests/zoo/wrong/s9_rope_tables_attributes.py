"""RopeGroupedQueryAttention keeps cos and sin as plain attributes: .to(device) leaves them behind."""
MODULE = "frontier"
LOSES = ['s9.ropegqa.tables']
MENTIONS = 'not a registered buffer'


class RopeGroupedQueryAttention(RopeGroupedQueryAttention):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        cos, sin = self.cos, self.sin
        del self.cos, self.sin
        self.cos, self.sin = cos, sin
