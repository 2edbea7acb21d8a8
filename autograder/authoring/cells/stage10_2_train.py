"""## Train one yourself

A fresh model of the same size, trained with your `train_steps` for 600 steps (about half a
minute on a laptop's CPU). Watch the loss: it falls in a rush once the model finds out that
it can copy, the moment an *induction head* forms.
"""
from pictures import bars


def train(model, steps, chunk):
    """Your train_steps, `chunk` batches at a time, with a progress bar; the loss of every step."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    losses, start = [], time.perf_counter()
    for done in range(0, steps, chunk):
        batches = [tiny_gpt.task_batch(32, seed=done + i) for i in range(chunk)]
        losses += train_steps(model, batches, optimizer, chunk)
        bar = "#" * (30 * (done + chunk) // steps)
        print(f"\r[{bar:<30}] step {done + chunk}/{steps}, loss {losses[-1]:.3f}, "
              f"{time.perf_counter() - start:.0f} s", end="", flush=True)
    print()
    return losses


torch.manual_seed(0)
trained = None  # the model the next cell looks into, once it has learned
if os.environ.get("NBGRADER_EXECUTION") == "autograde":
    print("Not run while autograding: the grade cells below decide the points. "
          "Run it yourself to see your model learn.")
else:
    try:
        fresh, chunk = GPTModel(tiny_gpt.CONFIG), 20
        losses = train(fresh, steps=600, chunk=chunk)
        trained = fresh
        starts = range(0, len(losses), chunk)
        means = [sum(losses[i:i + chunk]) / chunk for i in starts]
        display(bars(means, [str(i + chunk) if (i // chunk) % 5 == 4 else "" for i in starts],  # noqa: F821
                     f"your model's loss, {chunk} steps to a bar", axis="training step",
                     note="the first time through a word nothing can be predicted: about 0.6 of loss stays for good"))
    except NotImplementedError as exc:
        print(f"Not written yet ({exc!r}): fill in the code above, run its cell, then run this one again.")
