"""TransformerBlock is post-norm, as in the paper and stage 7: norm1(x + att(x)), then norm2(x + ff(x))."""
MODULE = "gpt"
LOSES = ["s10.block.forward", "s10.gpt.trained", "s10.gpt.writes"]
MENTIONS = "post-norm"
ONLY = True


class TransformerBlock(TransformerBlock):
    def forward(self, x):
        x = self.norm1(x + self.drop_shortcut(self.att(x)))
        return self.norm2(x + self.drop_shortcut(self.ff(x)))
