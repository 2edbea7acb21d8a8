"""train_steps calls model.train() and never model.eval(), leaving dropout on for whatever comes next."""
MODULE = "gpt"
LOSES = ["s10.train.mode"]
MENTIONS = "left the model in train mode"
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
        losses.append(loss.item())
    return losses
