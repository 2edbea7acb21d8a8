"""generate_cached keeps feeding one token with the caches after they hold context_size tokens, past the context."""
MODULE = "gpt"
LOSES = ["s10.cached.generate", "s10.gpt.writes"]
MENTIONS = "exceed this model's context"
ONLY = True


def generate_cached(model, idx, max_new_tokens, context_size):
    caches = None
    for _ in range(max_new_tokens):
        with torch.no_grad():
            if caches is None:
                logits, caches = model(idx[:, -context_size:])
            else:
                logits, caches = model(idx[:, -1:], caches)
        next_token = logits[:, -1, :].argmax(dim=-1, keepdim=True)
        idx = torch.cat([idx, next_token], dim=1)
    return idx
