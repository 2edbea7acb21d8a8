"""TransformerBlock with each branch kept in its own variable, the shortcut saved first as in the book."""
MODULE = "gpt"


class TransformerBlock(TransformerBlock):
    def forward(self, x):
        shortcut = x
        x = self.norm1(x)
        x = self.att(x)
        x = self.drop_shortcut(x)
        x = x + shortcut

        shortcut = x
        x = self.norm2(x)
        x = self.ff(x)
        x = self.drop_shortcut(x)
        return x + shortcut
