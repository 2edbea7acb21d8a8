"""EncoderLayer that copies its weights into nn.TransformerEncoderLayer and runs that under
torch.no_grad(), hoping for PyTorch's fused fast path, which no hand-written check would see."""
MODULE = "transformer"
LOSES = ["s7.encoder.*", "s7.sublayer_dropout", "s7.gradients"]
MENTIONS = "nn.MultiheadAttention"


class EncoderLayer(EncoderLayer):
    def forward(self, x, mask=None):
        d = x.shape[-1]
        layer = nn.TransformerEncoderLayer(d, self.self_attn.h, self.feed_forward.w_1.out_features, dropout=0.0,
                                           batch_first=True).to(x.device, x.dtype).eval()
        lin = self.self_attn.linears
        with torch.no_grad():
            layer.self_attn.in_proj_weight.copy_(torch.cat([lin[i].weight for i in range(3)]))
            layer.self_attn.in_proj_bias.copy_(torch.cat([lin[i].bias for i in range(3)]))
            layer.self_attn.out_proj.load_state_dict(lin[3].state_dict())
            layer.linear1.load_state_dict(self.feed_forward.w_1.state_dict())
            layer.linear2.load_state_dict(self.feed_forward.w_2.state_dict())
            layer.norm1.load_state_dict(self.norm1.state_dict())
            layer.norm2.load_state_dict(self.norm2.state_dict())
            pad = None if mask is None else (mask[:, 0] == 0)
            return layer(x, src_key_padding_mask=pad)
