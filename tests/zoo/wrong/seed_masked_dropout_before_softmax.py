"""The hand-written walk-through's ``SelfAttentionThree`` (section 3), typed in as printed, as the
contract's ``MaskedSelfAttention``: its ``q``/``k``/``v`` and its mask fit, and the three lines under
it are the adapter that takes the contract's ``dropout`` argument. It applies dropout to the
*scores*, after the mask filled them: a dropped -1e20 becomes 0, and after the softmax the hidden
token is visible again (nor is any weight zeroed, nor the kept ones scaled by 1/(1-p)). A bug of the
notes that the grader must catch. (Its mask must also be (batch, seq, seq), as the notes build it;
the contract's (batch, seq) padding mask does not broadcast against its scores.)"""
MODULE = "practical"
LOSES = ["s6.masked.dropout", "s6.masked.known_weights", "s6.masked.padding"]
MENTIONS = "above the diagonal is nonzero"

import math  # noqa: E402


class SelfAttentionThree(nn.Module):
    def __init__(self, input_dim=768, output_dim=768):
        super().__init__()
        self.dim = output_dim
        
        self.q = nn.Linear(input_dim, output_dim)
        self.k = nn.Linear(input_dim, output_dim)
        self.v = nn.Linear(input_dim, output_dim)
        self.attention_dropout = nn.Dropout(0.1) # 原始论文0.1
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, X, attention_mask=None):

        Q = self.q(X)
        K = self.k(X)
        V = self.v(X)

        att_weight = (Q @ K.transpose(-1, -2)) * (1.0 / math.sqrt(Q.shape[-1]))
        if attention_mask is not None:
            # 给padding部分给一个很小的值，因为e^x是越-inf几乎为0
            att_weight = att_weight.masked_fill(attention_mask == 0, float("-1e20"))

        att_weight = self.attention_dropout(att_weight)

        attention = self.softmax(att_weight) @ V

        return attention


class MaskedSelfAttention(SelfAttentionThree):  # the adapter: the contract's (dim, dropout)
    def __init__(self, dim, dropout=0.1):
        super().__init__(dim, dim)
        self.attention_dropout = nn.Dropout(dropout)
