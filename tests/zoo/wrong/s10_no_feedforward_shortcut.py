"""TransformerBlock returns the feed-forward branch alone, without adding it to its input."""
MODULE = "gpt"
LOSES = ["s10.block.forward", "s10.gpt.trained", "s10.gpt.writes"]
MENTIONS = "no shortcut around the feed-forward"
ONLY = True


class TransformerBlock(TransformerBlock):
    def forward(self, x):
        x = x + self.drop_shortcut(self.att(self.norm1(x)))
        return self.drop_shortcut(self.ff(self.norm2(x)))
