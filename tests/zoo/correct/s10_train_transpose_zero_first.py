"""train_steps zeroes the gradients before the forward (set_to_none=False) and gives cross_entropy the logits as (batch, vocab, n)."""
MODULE = "gpt"


def train_steps(model, batches, optimizer, steps):
    model.train()
    losses = []
    for i in range(steps):
        optimizer.zero_grad(set_to_none=False)
        inputs, targets = batches[i % len(batches)]
        loss = torch.nn.functional.cross_entropy(model(inputs).transpose(1, 2), targets)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses
