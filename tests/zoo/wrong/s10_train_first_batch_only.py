"""train_steps unpacks batches[0] once, before the loop, and trains on that batch at every step."""
MODULE = "gpt"
LOSES = ["s10.train.losses"]
MENTIONS = "batches[i % len(batches)]"
ONLY = True


def train_steps(model, batches, optimizer, steps):
    losses = []
    model.train()
    inputs, targets = batches[0]
    for step in range(steps):
        logits = model(inputs)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    return losses
