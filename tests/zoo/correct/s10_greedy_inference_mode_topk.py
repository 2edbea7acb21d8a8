"""generate_greedy under torch.inference_mode(), picking the next token with topk(1)."""
MODULE = "gpt"


@torch.inference_mode()
def generate_greedy(model, idx, max_new_tokens, context_size):
    out = idx.clone()
    for _ in range(max_new_tokens):
        logits = model(out[:, -context_size:])[:, -1, :]
        _, next_token = torch.topk(logits, k=1, dim=-1)
        out = torch.cat((out, next_token), dim=1)
    return out
