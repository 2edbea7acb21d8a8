"""train_steps never calls model.train(): it trains the model in whatever mode it was given (eval)."""
MODULE = "gpt"
LOSES = ["s10.train.mode"]
MENTIONS = "call model.train() first"
ONLY = True


def train_steps(model, batches, optimizer, steps):
    losses = []
    for step in range(steps):
        inputs, targets = batches[step % len(batches)]
        logits = model(inputs)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    return losses
