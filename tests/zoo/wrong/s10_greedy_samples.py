"""generate_greedy samples the next token from the softmax (torch.multinomial) instead of taking the argmax."""
MODULE = "gpt"
LOSES = ["s10.generate.greedy"]
MENTIONS = "goes wrong at token"


def generate_greedy(model, idx, max_new_tokens, context_size):
    for _ in range(max_new_tokens):
        with torch.no_grad():
            logits = model(idx[:, -context_size:])
        probs = torch.softmax(logits[:, -1, :], dim=-1)
        next_token = torch.multinomial(probs, num_samples=1)
        idx = torch.cat([idx, next_token], dim=1)
    return idx
