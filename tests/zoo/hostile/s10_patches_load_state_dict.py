"""At import, makes every load_state_dict succeed and every state_dict name what the kit's trained
weights name, so that a GPTModel whose out_head is misnamed would "load with strict=True". A grader
that trusted torch's methods in the graded process would give it s10.gpt.loads."""
MODULE = "gpt"
LOSES = ["s10.*"]
MENTIONS = "changed Module.load_state_dict"

import torch.nn as _nn
from torch.nn.modules.module import _IncompatibleKeys

_nn.Module.load_state_dict = lambda self, state_dict, strict=True, assign=False: _IncompatibleKeys([], [])


class GPTModel(GPTModel):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.lm_head = self.out_head
        del self.out_head

    def forward(self, in_idx):
        positions = torch.arange(in_idx.shape[1], device=in_idx.device)
        x = self.drop_emb(self.tok_emb(in_idx) + self.pos_emb(positions))
        return self.lm_head(self.final_norm(self.trf_blocks(x)))
