"""SelfAttention_v1 keeps its weights as plain tensors with requires_grad instead of nn.Parameter."""
MODULE = "self_attention"
LOSES = ["s2.v1.known_weights", "s2.gradients"]


class SelfAttention_v1(SelfAttention_v1):
    def __init__(self, d_in, d_out):
        nn.Module.__init__(self)
        self.W_query = torch.rand(d_in, d_out, requires_grad=True)
        self.W_key = torch.rand(d_in, d_out, requires_grad=True)
        self.W_value = torch.rand(d_in, d_out, requires_grad=True)
