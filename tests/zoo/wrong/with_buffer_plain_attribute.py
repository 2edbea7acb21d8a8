"""CausalAttentionWithBuffer assigns self.mask = ... like the class without buffers, never calling register_buffer."""
MODULE = "buffers"
LOSES = ["s5.kinds", "s5.with.device", "s5.with.state_dict"]
MENTIONS = "is not a registered buffer"


class CausalAttentionWithBuffer(CausalAttentionWithoutBuffers):
    pass
