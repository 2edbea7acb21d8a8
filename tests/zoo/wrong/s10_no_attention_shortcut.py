"""TransformerBlock forgets the shortcut around the attention: x = drop_shortcut(att(norm1(x)))."""
MODULE = "gpt"
LOSES = ["s10.block.forward", "s10.gpt.trained", "s10.gpt.writes"]
MENTIONS = {"s10.block.forward": "no shortcut around the attention",
            "s10.gpt.trained": "this still fails, so there is a mistake in this stage's code"}
ONLY = True


class TransformerBlock(TransformerBlock):
    def forward(self, x):
        x = self.drop_shortcut(self.att(self.norm1(x)))
        return x + self.drop_shortcut(self.ff(self.norm2(x)))
