"""TransformerBlock uses norm1 before both branches; norm2 is created but never used."""
MODULE = "gpt"
LOSES = ["s10.block.forward", "s10.gpt.trained", "s10.gpt.writes"]
MENTIONS = "uses norm1 before both branches"
ONLY = True


class TransformerBlock(TransformerBlock):
    def forward(self, x):
        x = x + self.drop_shortcut(self.att(self.norm1(x)))
        return x + self.drop_shortcut(self.ff(self.norm1(x)))
