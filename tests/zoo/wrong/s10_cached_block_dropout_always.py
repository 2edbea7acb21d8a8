"""CachedTransformerBlock drops out its branches with F.dropout(training=True), in eval mode too."""
MODULE = "gpt"
LOSES = ["s10.cached.model", "s10.gpt.writes"]
ONLY = True


class CachedTransformerBlock(CachedTransformerBlock):
    def forward(self, x, cache=None):
        p = self.drop_shortcut.p
        attended, cache = self.att(self.norm1(x), cache)
        x = x + torch.nn.functional.dropout(attended, p, training=True)
        return x + torch.nn.functional.dropout(self.ff(self.norm2(x)), p, training=True), cache
