"""generate_greedy feeds the whole sequence every step, never cropping it to context_size."""
MODULE = "gpt"
LOSES = ["s10.generate.greedy", "s10.gpt.writes"]
MENTIONS = "exceed this model's context"
ONLY = True


def generate_greedy(model, idx, max_new_tokens, context_size):
    for _ in range(max_new_tokens):
        with torch.no_grad():
            logits = model(idx)
        next_token = logits[:, -1, :].argmax(dim=-1, keepdim=True)
        idx = torch.cat([idx, next_token], dim=1)
    return idx
