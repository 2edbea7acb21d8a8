"""Stage 1: attention without trainable weights.

Every token of the sentence "Your journey starts with one step" is a 3-dimensional
embedding (``INPUTS`` below, one row per token). Self-attention turns each token
into a *context vector*: a weighted sum of all the tokens, where the weights say
how relevant every token is to the one we are looking at (the *query*).

Terms used throughout the lab:
- attention **scores**: raw, unnormalised similarities (here: dot products);
- attention **weights**: the scores normalised so that each row sums to 1;
- **context vector**: the weighted sum of the inputs, using the weights.
"""
import torch

INPUTS = torch.tensor(
    [[0.43, 0.15, 0.89],  # Your     (x^1)
     [0.55, 0.87, 0.66],  # journey  (x^2)
     [0.57, 0.85, 0.64],  # starts   (x^3)
     [0.22, 0.58, 0.33],  # with     (x^4)
     [0.77, 0.25, 0.10],  # one      (x^5)
     [0.05, 0.80, 0.55]]  # step     (x^6)
)


def attention_scores_loop(inputs, query):
    """Dot product of ``query`` with every row of ``inputs``, one row at a time.

    inputs: (num_tokens, d); query: (d,).  Returns a 1-D tensor of shape (num_tokens,).
    """
    # TODO: create an empty result with one entry per token, then fill entry i
    #       with torch.dot(inputs[i], query) in a Python loop.
    # YOUR CODE HERE
    raise NotImplementedError()


def attention_scores(inputs, query):
    """The same scores as ``attention_scores_loop``, in one matrix-vector product."""
    # TODO: no loop this time: one matrix product of inputs (num_tokens, d) with query (d,).
    # YOUR CODE HERE
    raise NotImplementedError()


def normalize_by_sum(scores):
    """Naive normalisation: divide the scores by their sum so they add up to 1.

    ``scores``: a 1-D tensor, the scores of one query against every token, (num_tokens,).
    Returns the same shape, every score divided by the sum of all of them (``scores.sum()``).
    Only a 1-D vector is expected: unlike the softmax functions below, this one is not applied
    row by row over the last dim of a matrix.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def softmax_naive(scores):
    """Softmax straight from its definition: exp(s_i) / sum_j exp(s_j) over the last dim.

    It is correct for small scores but overflows to inf/nan for large ones (try 1000).
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def softmax_stable(scores):
    """Softmax over the last dimension that stays finite for very large scores.

    Hint: softmax(s) == softmax(s - c) for any constant c; pick c so that exp never overflows.
    Do not call torch.softmax here: the point is to see why it is safe.
    """
    # TODO: subtract each row's maximum (keepdim=True keeps the shape broadcastable),
    #       then apply the naive formula.
    # YOUR CODE HERE
    raise NotImplementedError()


def context_vector(inputs, weights):
    """One context vector: the sum of the rows of ``inputs`` weighted by ``weights``.

    inputs: (num_tokens, d); weights: (num_tokens,).  Returns shape (d,).
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def attention_weights_all(inputs):
    """Attention weights of every token against every token: (num_tokens, num_tokens).

    Row i holds the softmax of the dot products of token i with all tokens, so every row sums to 1.
    """
    # TODO: all pairwise dot products are one matrix product (inputs times its transpose);
    #       then normalise each row with torch.softmax over the last dimension.
    # YOUR CODE HERE
    raise NotImplementedError()


def context_vectors_all(inputs):
    """All context vectors at once: (num_tokens, d); row i is the context vector of token i."""
    # YOUR CODE HERE
    raise NotImplementedError()
