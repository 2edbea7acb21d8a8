"""generate_greedy takes the logits of the first position, logits[:, 0], instead of the last."""
MODULE = "gpt"
LOSES = ["s10.generate.greedy", "s10.gpt.writes"]
MENTIONS = "goes wrong at token"
ONLY = True


def generate_greedy(model, idx, max_new_tokens, context_size):
    for _ in range(max_new_tokens):
        with torch.no_grad():
            logits = model(idx[:, -context_size:])
        next_token = logits[:, 0, :].argmax(dim=-1, keepdim=True)
        idx = torch.cat([idx, next_token], dim=1)
    return idx
