"""generate_greedy calls the model with autograd on (no torch.no_grad()), building a graph for every step."""
MODULE = "gpt"
LOSES = ["s10.generate.greedy"]
MENTIONS = "autograd"
ONLY = True


def generate_greedy(model, idx, max_new_tokens, context_size):
    for _ in range(max_new_tokens):
        logits = model(idx[:, -context_size:])
        next_token = logits[:, -1, :].argmax(dim=-1, keepdim=True)
        idx = torch.cat([idx, next_token], dim=1)
    return idx
