"""generate_cached feeds the whole cropped sequence every step with no caches: right tokens, no saving."""
MODULE = "gpt"
LOSES = ["s10.cached.generate"]
MENTIONS = "with 0 cached"
ONLY = True


def generate_cached(model, idx, max_new_tokens, context_size):
    for _ in range(max_new_tokens):
        with torch.no_grad():
            logits, _ = model(idx[:, -context_size:])
        next_token = logits[:, -1, :].argmax(dim=-1, keepdim=True)
        idx = torch.cat([idx, next_token], dim=1)
    return idx
