"""Hugging Face's ``CLIPAttention`` as stage 6's ``MultiHeadSelfAttention``: a square layer from model code,
where the contract is square too (``hidden_dim`` in and out), graded with full marks.

Source: huggingface/transformers, ``src/transformers/models/clip/modeling_clip.py`` (commit 000f1ff),
function ``eager_attention_forward`` and class ``CLIPAttention`` as written; Apache License 2.0, Copyright
The OpenAI Team Authors and The HuggingFace Team. Only the lines outside them are ours: stand-ins for the
library's names they refer to (its config, its typing of keyword arguments, its table of other attention
kernels, which the eager config never reads), and the adapter after them.

The adapter renames ``out_proj`` to the contract's ``o_proj`` and passes the contract's arguments as a
config. Two things it converts rather than renames, since Hugging Face does them outside the layer:
- the mask: the contract's (1 = a real token, 0 = padding, broadcasting to (batch, heads, seq, seq)) into
  the additive mask Hugging Face's models build before calling the layer (0, or the dtype's minimum);
- the return value: the layer returns ``(output, attention weights)``, the contract the output alone.

Written differently from the reference: the keys' projection is created first, the queries are scaled
inside the product (``* head_dim ** -0.5``), the mask is added rather than filled, the softmax runs in
float32 and is cast back, dropout is ``F.dropout`` with the layer's mode.
"""
MODULE = "practical"
HELPERS = ["renamed"]  # _Renamed: the adapter that stores the source's names under the contract's

from types import SimpleNamespace
from typing import Callable, Optional, Union

# ---- stand-ins for the library's names (ours) ----
TransformersKwargs = dict


class Unpack:  # typing.Unpack (Python 3.11+), as an annotation alone
    def __class_getitem__(cls, item):
        return item


CLIPVisionConfig = CLIPTextConfig = SimpleNamespace
ALL_ATTENTION_FUNCTIONS = {}


# ---- huggingface/transformers src/transformers/models/clip/modeling_clip.py (Apache-2.0), as written ----

def eager_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: Optional[torch.Tensor],
    scaling: float,
    dropout: float = 0.0,
    **kwargs: Unpack[TransformersKwargs],
):
    attn_weights = torch.matmul(query, key.transpose(-1, -2)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)

    attn_output = torch.matmul(attn_weights, value)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


class CLIPAttention(nn.Module):
    """Multi-headed attention from 'Attention Is All You Need' paper"""

    def __init__(self, config: Union[CLIPVisionConfig, CLIPTextConfig]):
        super().__init__()
        self.config = config
        self.embed_dim = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_dim = self.embed_dim // self.num_heads
        if self.head_dim * self.num_heads != self.embed_dim:
            raise ValueError(
                f"embed_dim must be divisible by num_heads (got `embed_dim`: {self.embed_dim} and `num_heads`:"
                f" {self.num_heads})."
            )
        self.scale = self.head_dim**-0.5
        self.dropout = config.attention_dropout
        self.is_causal = False

        self.k_proj = nn.Linear(self.embed_dim, self.embed_dim)
        self.v_proj = nn.Linear(self.embed_dim, self.embed_dim)
        self.q_proj = nn.Linear(self.embed_dim, self.embed_dim)
        self.out_proj = nn.Linear(self.embed_dim, self.embed_dim)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: Optional[torch.Tensor] = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Input shape: Batch x Time x Channel"""

        batch_size, seq_length, embed_dim = hidden_states.shape

        queries = self.q_proj(hidden_states)
        keys = self.k_proj(hidden_states)
        values = self.v_proj(hidden_states)

        queries = queries.view(batch_size, seq_length, -1, self.head_dim).transpose(1, 2)
        keys = keys.view(batch_size, seq_length, -1, self.head_dim).transpose(1, 2)
        values = values.view(batch_size, seq_length, -1, self.head_dim).transpose(1, 2)

        attention_interface: Callable = eager_attention_forward
        if self.config._attn_implementation != "eager":
            attention_interface = ALL_ATTENTION_FUNCTIONS[self.config._attn_implementation]

        attn_output, attn_weights = attention_interface(
            self,
            queries,
            keys,
            values,
            attention_mask,
            scaling=self.scale,
            dropout=0.0 if not self.training else self.dropout,
            **kwargs,
        )

        attn_output = attn_output.reshape(batch_size, seq_length, -1).contiguous()
        attn_output = self.out_proj(attn_output)

        return attn_output, attn_weights


# ---- the adapter (ours): the contract's name, arguments, mask and return value ----

class MultiHeadSelfAttention(_Renamed, CLIPAttention):
    RENAMED = {"out_proj": "o_proj"}

    def __init__(self, hidden_dim, num_heads, dropout=0.1):
        super().__init__(SimpleNamespace(hidden_size=hidden_dim, num_attention_heads=num_heads,
                                         attention_dropout=dropout, _attn_implementation="eager"))

    def forward(self, x, attention_mask=None):
        if attention_mask is not None:  # 0 = padding, as Hugging Face's models turn it additive before the layer
            attention_mask = torch.zeros(attention_mask.shape, dtype=x.dtype, device=x.device).masked_fill(
                attention_mask == 0, torch.finfo(x.dtype).min)
        return super().forward(x, attention_mask)[0]
