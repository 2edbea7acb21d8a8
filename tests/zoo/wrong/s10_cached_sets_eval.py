"""generate_cached calls model.eval() first, as the book's KV-cache bonus code does, and never restores
the mode it found: a model being trained is left with its dropout off."""
MODULE = "gpt"
LOSES = ["s10.cached.generate"]
MENTIONS = "left the model in eval mode"
ONLY = True


def generate_cached(model, idx, max_new_tokens, context_size):
    model.eval()
    caches = None
    for _ in range(max_new_tokens):
        with torch.no_grad():
            if caches is None:
                logits, caches = model(idx[:, -context_size:])
            else:
                logits, caches = model(idx[:, -1:], caches)
        idx = torch.cat([idx, logits[:, -1, :].argmax(dim=-1, keepdim=True)], dim=1)
        if caches[0][0].shape[2] >= context_size:
            caches = None
    return idx
