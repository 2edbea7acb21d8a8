"""train_steps sums the cross-entropy over the positions (reduction="sum") instead of averaging it."""
MODULE = "gpt"
LOSES = ["s10.train.losses"]
MENTIONS = "not summed"
ONLY = True


def train_steps(model, batches, optimizer, steps):
    losses = []
    model.train()
    for step in range(steps):
        inputs, targets = batches[step % len(batches)]
        logits = model(inputs)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    return losses
