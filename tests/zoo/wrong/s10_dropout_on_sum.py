"""TransformerBlock drops out the sum x + branch, so the shortcut is dropped too."""
MODULE = "gpt"
LOSES = ["s10.block.dropout"]
MENTIONS = "not on the shortcut"
ONLY = True


class TransformerBlock(TransformerBlock):
    def forward(self, x):
        x = self.drop_shortcut(x + self.att(self.norm1(x)))
        return self.drop_shortcut(x + self.ff(self.norm2(x)))
