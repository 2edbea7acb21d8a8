"""RopeGroupedQueryAttention saves cos and sin in its state_dict: a stage 8 checkpoint no longer loads as it is."""
MODULE = "frontier"
LOSES = ['s9.ropegqa.tables']
MENTIONS = 'persistent=False'
ONLY = True


class RopeGroupedQueryAttention(RopeGroupedQueryAttention):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        cos, sin = self.cos, self.sin
        del self.cos, self.sin
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)
