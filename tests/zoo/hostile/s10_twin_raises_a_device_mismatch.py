"""TransformerBlock leaves out the attention's shortcut (a wrong block, as ``s10_no_attention_shortcut``), and in
the twin's run of an end-to-end check, where its ``att`` is the kit's attention and not its own
MultiHeadAttention, raises what torch says when a tensor meets another device. Read as part of the student's
own observation, that message would turn the failed checks into "not measured" on CUDA, and their points into
full marks. The grader reads the twin apart: it can only choose a sentence, and here it says nothing (a twin
that raised). The end-to-end checks are lost as the block's mistake costs them, as root and as a user."""
MODULE = "gpt"
STAGES = [10]
LOSES = ["s10.block.forward", "s10.gpt.trained", "s10.gpt.writes"]
MENTIONS = "no shortcut around the attention"

_TRAINED_WIDTH = 64  # the trained model's emb_dim: the end-to-end checks' models, and their twins


class TransformerBlock(TransformerBlock):
    def forward(self, x):
        if x.shape[-1] == _TRAINED_WIDTH and not isinstance(self.att, MultiHeadAttention):
            raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                               "cuda:0 and cpu!")
        x = self.drop_shortcut(self.att(self.norm1(x)))  # no shortcut around the attention
        return x + self.drop_shortcut(self.ff(self.norm2(x)))
