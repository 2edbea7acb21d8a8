"""TransformerBlock calls F.dropout(..., training=True), so the branches are dropped in eval mode too."""
MODULE = "gpt"
LOSES = ["s10.block.dropout", "s10.gpt.trained", "s10.gpt.writes"]
MENTIONS = "eval mode"
ONLY = True


class TransformerBlock(TransformerBlock):
    def forward(self, x):
        p = self.drop_shortcut.p
        x = x + torch.nn.functional.dropout(self.att(self.norm1(x)), p=p, training=True)
        return x + torch.nn.functional.dropout(self.ff(self.norm2(x)), p=p, training=True)
