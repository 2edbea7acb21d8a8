"""CachedTransformerBlock is post-norm, though TransformerBlock is pre-norm: only the cached model is wrong."""
MODULE = "gpt"
LOSES = ["s10.cached.model", "s10.gpt.writes"]
ONLY = True


class CachedTransformerBlock(CachedTransformerBlock):
    def forward(self, x, cache=None):
        attended, cache = self.att(x, cache)
        x = self.norm1(x + self.drop_shortcut(attended))
        return self.norm2(x + self.drop_shortcut(self.ff(x))), cache
