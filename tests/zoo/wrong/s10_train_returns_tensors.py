"""train_steps appends the loss tensors themselves (loss.detach()) instead of Python floats (loss.item())."""
MODULE = "gpt"
LOSES = ["s10.train.losses"]
MENTIONS = "Python floats"
ONLY = True


def train_steps(model, batches, optimizer, steps):
    losses = []
    model.train()
    for step in range(steps):
        inputs, targets = batches[step % len(batches)]
        logits = model(inputs)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    model.eval()
    return losses
