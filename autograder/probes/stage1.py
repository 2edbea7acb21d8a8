"""Stage 1 probes: the functions of simple.py on the book's inputs and on fresh ones."""
import torch

from .common import INPUTS, ProbeError, Probes, kits_part, plain, randn

PROBES = Probes()

EXTRA = randn(5, 4, seed=1)  # inputs nobody printed: a memorised answer does not fit these


def _call(lab, name, *args):
    fn = getattr(lab.simple, name)
    return plain(fn(*[a.clone() for a in args]), f"{name}(...)")  # copies: in-place edits stay local


def _book_and_extra(lab, device, name, book_args, extra_args):
    dev = [a.to(device) for a in book_args], [a.to(device) for a in extra_args]
    return {"book": lab.attempt(_call, lab, name, *dev[0]), "extra": lab.attempt(_call, lab, name, *dev[1])}


@PROBES.add("s1.scores_loop", golden=True)
def scores_loop(lab, device):
    return _book_and_extra(lab, device, "attention_scores_loop", (INPUTS, INPUTS[1]), (EXTRA, EXTRA[3]))


@PROBES.add("s1.scores", golden=True)
def scores(lab, device):
    return _book_and_extra(lab, device, "attention_scores", (INPUTS, INPUTS[1]), (EXTRA, EXTRA[3]))


BOOK_SCORES_2 = INPUTS @ INPUTS[1]  # the scores of query 2, computed by the kit itself


@PROBES.add("s1.normalize_by_sum", golden=True)
def normalize_by_sum(lab, device):
    return _book_and_extra(lab, device, "normalize_by_sum", (BOOK_SCORES_2,), (EXTRA[0].abs(),))


@PROBES.add("s1.softmax_naive", golden=True)
def softmax_naive(lab, device):
    return _book_and_extra(lab, device, "softmax_naive", (BOOK_SCORES_2,), (EXTRA,))  # 2-D: over the last dim


LARGE = torch.tensor([[1000.0, 1001.0, 999.0, 0.0], [-1000.0, -1001.0, -999.5, -2000.0]])


@PROBES.add("s1.softmax_stable", golden=True)
def softmax_stable(lab, device):
    out = _book_and_extra(lab, device, "softmax_stable", (BOOK_SCORES_2,), (EXTRA,))
    out["large"] = lab.attempt(_call, lab, "softmax_stable", LARGE.to(device))
    return out


@PROBES.add("s1.context_vector", golden=True)
def context_vector(lab, device):
    weights = torch.softmax(BOOK_SCORES_2, dim=0)
    extra_w = torch.softmax(EXTRA[:, 0], dim=0)
    return _book_and_extra(lab, device, "context_vector", (INPUTS, weights), (EXTRA, extra_w))


@PROBES.add("s1.attention_weights_all", golden=True)
def attention_weights_all(lab, device):
    return _book_and_extra(lab, device, "attention_weights_all", (INPUTS,), (EXTRA,))


@PROBES.add("s1.context_vectors_all", golden=True)
def context_vectors_all(lab, device):
    return _book_and_extra(lab, device, "context_vectors_all", (INPUTS,), (EXTRA,))


@PROBES.add("s1.context_vectors_all.twin")
def context_vectors_all_twin(lab, device):
    """``context_vectors_all`` calling the kit's ``attention_weights_all`` in place of the student's: its
    check's twin, run where the check failed, to say which of the two functions the mistake is in."""
    def run(inputs, calls):
        calls.clear()
        out = _call(lab, "context_vectors_all", inputs)
        if not calls:  # it computes its weights another way: the kit's function would name the wrong part
            raise ProbeError("context_vectors_all did not call attention_weights_all")
        return out

    def kits(inputs):
        return torch.softmax(inputs @ inputs.T, dim=-1)

    with kits_part(lab.simple, "attention_weights_all", kits) as calls:
        return {"book": lab.attempt(run, INPUTS.to(device), calls), "extra": lab.attempt(run, EXTRA.to(device), calls)}
