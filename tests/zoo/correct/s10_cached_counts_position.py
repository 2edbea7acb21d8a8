"""generate_cached that counts the cached tokens itself instead of reading the caches' shape, with one no_grad around the loop."""
MODULE = "gpt"


def generate_cached(model, idx, max_new_tokens, context_size):
    caches, cached = None, 0
    with torch.no_grad():
        for _ in range(max_new_tokens):
            if cached == 0:
                window = idx[:, -context_size:]
                logits, caches = model(window)
                cached = window.shape[1]
            else:
                logits, caches = model(idx[:, -1:], caches)
                cached += 1
            idx = torch.cat([idx, logits[:, -1].argmax(-1, keepdim=True)], dim=-1)
            if cached >= context_size:
                caches, cached = None, 0
    return idx
