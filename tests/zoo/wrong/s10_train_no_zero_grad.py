"""train_steps never zeroes the gradients, so each step's gradient adds to the ones before."""
MODULE = "gpt"
LOSES = ["s10.train.losses"]
MENTIONS = "optimizer.zero_grad()"
ONLY = True


def train_steps(model, batches, optimizer, steps):
    losses = []
    model.train()
    for step in range(steps):
        inputs, targets = batches[step % len(batches)]
        logits = model(inputs)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    return losses
