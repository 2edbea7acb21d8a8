"""CachedTransformerBlock adds both branches back without drop_shortcut: right in eval mode (so the
cached model's logits and text are right), but nothing is dropped out in training."""
MODULE = "gpt"
LOSES = ["s10.block.dropout"]
MENTIONS = "CachedTransformerBlock in train mode with dropout=0.2 zeroed nothing"
ONLY = True


class CachedTransformerBlock(CachedTransformerBlock):
    def forward(self, x, cache=None):
        attended, cache = self.att(self.norm1(x), cache)
        x = x + attended
        return x + self.ff(self.norm2(x)), cache
