"""generate_greedy calls model.eval() first and never restores the mode it found."""
MODULE = "gpt"
LOSES = ["s10.generate.greedy"]
MENTIONS = "left the model in eval mode"
ONLY = True


def generate_greedy(model, idx, max_new_tokens, context_size):
    model.eval()
    for _ in range(max_new_tokens):
        with torch.no_grad():
            logits = model(idx[:, -context_size:])
        idx = torch.cat([idx, logits[:, -1, :].argmax(dim=-1, keepdim=True)], dim=1)
    return idx
