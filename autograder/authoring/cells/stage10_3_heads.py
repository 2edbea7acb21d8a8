"""## Look at its heads

Every head of the model you just trained, on a word written twice and a half, computed by your own
attention. Look for a head in layer 0 that looks at the previous character (a line just below the
diagonal), and one in layer 1 that looks at the character that came *after* the current one last
time (a line as many tokens back as the word is long, less one): an induction head.
"""
from pictures import attention_by_block, head_pictures

sample = "quartz quartz quar"
if trained is None:  # autograde leaves the training out, and so does code not written yet
    print("No model was trained in the cell above, so there are no learned heads to look at.")
else:
    try:
        weights = attention_by_block(trained.eval(), tiny_gpt.encode(sample))
        display(head_pictures(weights, list(sample), period=sample.index(" ") + 1))  # noqa: F821
        display(head_pictures(weights, list(sample), every=True))  # noqa: F821
    except NotImplementedError as exc:
        print(f"Not written yet ({exc!r}): fill in the code above, run its cell, then run this one again.")
