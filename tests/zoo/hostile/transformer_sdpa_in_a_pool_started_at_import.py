"""scaled_dot_product_attention computed by F.scaled_dot_product_attention in a thread pool that
transformer.py starts when it is imported, so that its thread is there before any check runs (a pool
made per call meets the cgroup's hold). The import of a stage written by hand is asked like a check of
that stage: no thread may start there either, and the module fails to import, with every check of it."""
MODULE = "transformer"
STAGES = [7]
LOSES = ["s7.*"]
MENTIONS = "thread"

from concurrent.futures import ThreadPoolExecutor

import torch.nn.functional as F

_pool = ThreadPoolExecutor(1)
_pool.submit(lambda: None).result()  # its thread starts now, and waits for work
_by_hand = scaled_dot_product_attention


def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    _, weights = _by_hand(query, key, value, mask, dropout)
    attn_mask = None if mask is None else (mask != 0)
    return _pool.submit(F.scaled_dot_product_attention, query, key, value, attn_mask=attn_mask).result(), weights
