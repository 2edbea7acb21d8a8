"""At import, finds the kit's trained weights in the grading process's memory (a dict that names
tok_emb.weight) and sets every tensor to zero, then returns zero logits: were the expected logits
computed beside the student's code from those weights, they would match. They are the reference's,
computed at build time and kept in the grading process; and the scan itself is refused."""
MODULE = "gpt"
LOSES = ["s10.*"]
MENTIONS = "scan the grader's memory"

import gc as _gc

for _found in _gc.get_objects():
    if isinstance(_found, dict) and "tok_emb.weight" in _found and "trf_blocks.0.att.W_query.weight" in _found:
        for _t in _found.values():
            if isinstance(_t, torch.Tensor):
                _t.zero_()
