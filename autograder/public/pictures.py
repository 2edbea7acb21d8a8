"""Pictures of attention, drawn as SVG by the standard library: who attends to whom.

One drawing code for every place a student meets feedback: the stage notebooks and the handout
(``show_attention``), a failed public self-check (saved as a file), and the grader's report,
Gradescope and nbgrader feedback (from the trusted side). SVG, not matplotlib: the handout needs
nothing but torch and pytest, a picture is a few kilobytes of text that any browser, notebook or
HTML page shows inline, and the cells' colours and outlines are exact.

Only torch and the standard library here: the build copies this file beside the public checks.
"""
from __future__ import annotations

import base64
import html
import math
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

# "Your journey starts with one step": the book's sentence, one token per row of its inputs.
TOKENS = ("Your", "journey", "starts", "with", "one", "step")
CELL = 34
FLAG = "#d62728"  # a cell that breaks the rule: red, whatever the colour scale says
RULE = "#555555"  # the outline of cells the rule forbids


class Picture:
    """An SVG picture with a title and a caption, and ``alt``: what it shows, in words, for whoever cannot
    see it (a screen reader reads it; the drawing itself is text a reader does not reach). Notebooks show
    it inline as an ``<img>`` with that alt text (``_repr_mimebundle_``)."""

    def __init__(self, svg: str, title: str = "", caption: str = "", kind: str = "", flagged: int = 0,
                 alt: str = ""):
        self.svg, self.title, self.caption = svg, title, caption
        self.kind, self.flagged = kind, flagged  # what it shows ("leak", "weights", ...); cells in red
        self.alt = alt or ". ".join(part for part in (title, caption) if part)

    def _repr_svg_(self) -> str:
        return self.svg

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        """The picture as an ``<img>`` with its alt text first: nbconvert's pages (nbgrader's feedback among
        them) show SVG output as an ``<img>`` with none. The SVG itself, and the alt text as plain text, for
        whatever shows neither HTML nor pictures."""
        return {"text/html": self.html(), "image/svg+xml": self.svg, "text/plain": self.alt}

    def data_uri(self) -> str:
        """The picture as an ``<img src=...>`` value: an HTML page or feedback holds it inline."""
        return "data:image/svg+xml;base64," + base64.b64encode(self.svg.encode()).decode()

    def html(self) -> str:
        """An ``<img>`` in a ``<figure>``; its caption is drawn in the picture, so it travels with it."""
        return (f'<figure class="picture" data-picture="{html.escape(self.kind, quote=True)}" '
                f'data-flagged="{self.flagged}"><img alt="{html.escape(self.alt, quote=True)}" '
                f'src="{self.data_uri()}"></figure>')

    def save(self, path: str | os.PathLike[str]) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.svg, encoding="utf-8")
        return path


class Pictures(list[Picture]):
    """Several pictures side by side in a notebook (one per head, say)."""

    def _repr_html_(self) -> str:
        return '<div style="display:flex;flex-wrap:wrap;gap:12px">' + "".join(p.html() for p in self) + "</div>"


def _colour(v: float) -> str:
    """White at 0 to deep blue at 1."""
    v = min(max(v, 0.0), 1.0)
    low, high = (255, 255, 255), (8, 69, 148)
    return "#" + "".join(f"{round(a + (b - a) * v):02x}" for a, b in zip(low, high))


def lines_within(text: str, width_px: float, size: float = 10) -> list[str]:
    """``text`` in lines that fit ``width_px`` (about 0.55 em per character)."""
    most, lines, line = max(20, int(width_px / (0.55 * size))), [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > most:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return lines + ([line] if line else [])


def svg_text(x: float, y: float, s: object, size: float = 11, anchor: str = "middle", colour: str = "#222",
             rotate: float | None = None, weight: str = "normal", family: str = "sans-serif") -> str:
    """An SVG ``<text>`` element, ``s`` escaped (a student's name or a check's feedback is never markup)."""
    turn = f' transform="rotate({rotate} {x:.1f} {y:.1f})"' if rotate is not None else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{colour}" '
            f'font-weight="{weight}" font-family="{family}"{turn}>{html.escape(str(s))}</text>')


def heatmap(matrix: torch.Tensor | Sequence[Sequence[float]], rows: Sequence[str] | Sequence[int] | None = None,
            cols: Sequence[str] | Sequence[int] | None = None, title: str = "",
            forbidden: torch.Tensor | Sequence[Sequence[bool]] | None = None,
            flagged: torch.Tensor | Sequence[Sequence[bool]] | None = None, scale: float | None = None, note: str = "",
            row_axis: str = "query", col_axis: str = "key", kind: str = "weights") -> Picture:
    """A matrix as coloured cells (rows: ``row_axis``, columns: ``col_axis``), with its values
    written in when it is small. ``forbidden``: cells the rule says must be 0, outlined; ``flagged``:
    cells that break the rule, in red. ``scale``: the value drawn darkest (default: the largest)."""
    m = torch.as_tensor(matrix).detach().to("cpu", torch.float64)
    if m.dim() != 2:
        raise ValueError(f"heatmap needs a matrix, not a tensor of shape {tuple(m.shape)}")
    if max(m.shape) > MAX_SIDE:  # a picture's size is bounded whatever the student's layer returned
        m, forbidden, flagged, rows, cols, note = _pooled(m, forbidden, flagged, note)
    n_rows, n_cols = m.shape
    rows = [str(r) for r in (rows or range(n_rows))]
    cols = [str(c) for c in (cols or range(n_cols))]
    finite = m[m.isfinite()]
    top = scale or (float(finite.abs().max()) if finite.numel() else 1.0) or 1.0
    cell = CELL if max(n_rows, n_cols) <= 12 else max(6, 360 // max(n_rows, n_cols))
    left = 12 + 7 * max(len(r) for r in rows) if cell >= 20 else 30
    head = 40 + (7 * max(len(c) for c in cols) if cell >= 20 else 16)
    width = max(left + cell * n_cols + 16, 16 + 7.5 * len(title), 260)
    note_lines = lines_within(note, width - 16) if note else []
    height = head + cell * n_rows + 18 + 14 * len(note_lines)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height}" '
             f'viewBox="0 0 {width:.0f} {height}">', f'<rect width="{width:.0f}" height="{height}" fill="white"/>',
             svg_text(8, 16, title, size=13, anchor="start", weight="bold")]
    for j, c in enumerate(cols if cell >= 20 else []):
        x = left + cell * j + cell / 2
        parts.append(svg_text(x, head - 6, c, anchor="start", rotate=-45))
    for i, r in enumerate(rows if cell >= 20 else []):
        parts.append(svg_text(left - 6, head + cell * i + cell / 2 + 4, r, anchor="end"))
    parts.append(svg_text(8, 30, f"rows: {row_axis} \u2193   columns: {col_axis} \u2192", size=9, anchor="start",
                       colour="#666"))
    for i in range(n_rows):
        for j in range(n_cols):
            v = float(m[i, j])
            x, y = left + cell * j, head + cell * i
            fill = _colour(abs(v) / top) if math.isfinite(v) else "#ffbf00"  # nan and inf in amber
            parts.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{fill}" stroke="#eee"/>')
            if cell >= 28:
                shown = f"{v:.2f}" if math.isfinite(v) else str(v)
                parts.append(svg_text(x + cell / 2, y + cell / 2 + 4, shown, size=9,
                                   colour="white" if math.isfinite(v) and abs(v) / top > 0.55 else "#222"))
    for mask, colour, width_px, dash in ((forbidden, RULE, 1.2, ' stroke-dasharray="3 2"'), (flagged, FLAG, 3, "")):
        if mask is None:
            continue
        mask = torch.as_tensor(mask, dtype=torch.bool)
        for i, j in mask.nonzero().tolist():
            parts.append(f'<rect x="{left + cell * j + 1.5}" y="{head + cell * i + 1.5}" width="{cell - 3}" '
                         f'height="{cell - 3}" fill="none" stroke="{colour}" stroke-width="{width_px}"{dash}/>')
    for k, line in enumerate(note_lines):
        parts.append(svg_text(8, head + cell * n_rows + 16 + 14 * k, line, size=10, anchor="start", colour="#444"))
    parts.append("</svg>")
    red = int(torch.as_tensor(flagged, dtype=torch.bool).sum()) if flagged is not None else 0
    alt = (f"A heatmap of {title}: {n_rows} rows ({row_axis}) by {n_cols} columns ({col_axis})"
           + (f", {red} cells in red" if red else "") + (f". {note}" if note else ""))
    return Picture("".join(parts), title, note, kind, red, alt)


MAX_SIDE = 48  # cells a heatmap draws across; a larger matrix is drawn in blocks (about 400 KB of SVG at most)


def _pooled(m: torch.Tensor, forbidden: torch.Tensor | Sequence[Sequence[bool]] | None,
            flagged: torch.Tensor | Sequence[Sequence[bool]] | None,
            note: str) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None, None, None, str]:
    """``m`` drawn in square blocks so that no side passes ``MAX_SIDE``: each cell shows the block's
    largest magnitude (nan or inf when the block holds one), and is outlined or flagged when any cell
    of the block is."""
    n_rows, n_cols = m.shape
    k = -(-max(n_rows, n_cols) // MAX_SIDE)

    def pool(t: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.max_pool2d(t[None, None], k, k, ceil_mode=True)[0, 0]

    bad = pool((~m.isfinite()).double())
    pooled = pool(torch.where(m.isfinite(), m.abs(), torch.zeros_like(m)))
    pooled[bad > 0] = float("nan")
    masks = [None if mask is None else pool(torch.as_tensor(mask, dtype=torch.bool)[:n_rows, :n_cols].double()) > 0
             for mask in (forbidden, flagged)]
    said = (f"{n_rows}\u00d7{n_cols} values, drawn in blocks of {k}\u00d7{k}: "
            "each cell shows its block's largest magnitude")
    return pooled, masks[0], masks[1], None, None, f"{said}. {note}" if note else said


def bars(values: torch.Tensor | Sequence[float], labels: Sequence[str] | Sequence[int] | None = None,
         title: str = "", limit: float | None = None, note: str = "", axis: str = "", kind: str = "bars") -> Picture:
    """Values as vertical bars, those above ``limit`` (a line) in red."""
    v = [float(x) for x in torch.as_tensor(values).detach().to("cpu", torch.float64).flatten()]
    labels = [str(x) for x in (labels or range(len(v)))]
    top = max([abs(x) for x in v if math.isfinite(x)] + [limit or 0.0, 1e-12])
    bar, left, head, tall = 26, 50, 28, 140
    width = max(left + bar * len(v) + 16, 16 + 7.5 * len(title), 300)
    note_lines = lines_within(note, width - 16) if note else []
    height = head + tall + 40 + 14 * len(note_lines)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height}" '
             f'viewBox="0 0 {width:.0f} {height}">', f'<rect width="{width:.0f}" height="{height}" fill="white"/>',
             svg_text(8, 16, title, size=13, anchor="start", weight="bold"),
             f'<line x1="{left}" y1="{head + tall}" x2="{width - 10:.0f}" y2="{head + tall}" stroke="#888"/>',
             svg_text(left - 4, head + 8, f"{top:.2g}", size=9, anchor="end"),
             svg_text(left - 4, head + tall, "0", size=9, anchor="end")]
    for k, (x, label) in enumerate(zip(v, labels)):
        h = tall * min(abs(x) / top, 1.0) if math.isfinite(x) else tall
        bad = not math.isfinite(x) or (limit is not None and abs(x) > limit)
        parts.append(f'<rect x="{left + bar * k + 3}" y="{head + tall - h:.1f}" width="{bar - 6}" height="{h:.1f}" '
                     f'fill="{FLAG if bad else "#4c78a8"}"/>')
        parts.append(svg_text(left + bar * k + bar / 2, head + tall + 14, label, size=9))
    if limit is not None:
        y = head + tall - tall * min(limit / top, 1.0)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - 10:.0f}" y2="{y:.1f}" stroke="{RULE}" '
                     'stroke-dasharray="4 3"/>')
        parts.append(svg_text(width - 12, y - 3, f"limit {limit:.2g}", size=9, anchor="end", colour=RULE))
    if axis:
        parts.append(svg_text(left, head + tall + 30, axis, size=10, anchor="start", colour="#444"))
    for k, line in enumerate(note_lines):
        parts.append(svg_text(8, head + tall + 44 + 14 * k, line, size=10, anchor="start", colour="#444"))
    parts.append("</svg>")
    red = sum(1 for x in v if not math.isfinite(x) or (limit is not None and abs(x) > limit))
    alt = (f"A bar chart of {title}: {len(v)} bars" + (f", one per {axis}" if axis else "")
           + (f", {red} in red (above the limit of {limit:.2g})" if red and limit is not None else
              f", {red} in red" if red else "") + (f". {note}" if note else ""))
    return Picture("".join(parts), title, note, kind, red, alt)


def listing(rows: Iterable[tuple[object, object]], title: str, yes: str, no: str, kind: str = "listing") -> Picture:
    """Named things, each with a green ``yes`` or a red ``no`` (``rows``: (name, ok) pairs): the red
    ones first, and at most ``MAX_SIDE`` of them, with a line saying how many more there are."""
    rows = list(rows)
    flagged = sum(1 for _, ok in rows if not ok)
    more = max(0, len(rows) - MAX_SIDE)
    rows = sorted(rows, key=lambda row: bool(row[1]))[:MAX_SIDE] if more else rows
    rows = [(str(name)[:40], ok) for name, ok in rows] + ([(f"... and {more} more", True)] if more else [])
    height = 30 + 18 * len(rows)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="420" height="{height}" viewBox="0 0 420 {height}">',
             f'<rect width="420" height="{height}" fill="white"/>',
             svg_text(8, 16, title, size=13, anchor="start", weight="bold")]
    for i, (name, ok) in enumerate(rows):
        y = 36 + 18 * i
        colour = "#2ca02c" if ok else FLAG
        parts += [f'<circle cx="16" cy="{y - 4}" r="5" fill="{colour}"/>',
                  svg_text(28, y, name, anchor="start", family="monospace"),
                  svg_text(260, y, yes if ok else no, anchor="start", colour=colour)]
    parts.append("</svg>")
    alt = f"A list of {title}: " + "; ".join(f"{name}: {yes if ok else no}" for name, ok in rows)
    return Picture("".join(parts), title, kind=kind, flagged=flagged, alt=alt)


def row_sum_problem(weights: torch.Tensor, rows: Sequence[str] | None = None) -> str | None:
    """"row 1 (journey) sums to 0.71" for the first row of ``weights`` (n, k) that does not sum to
    1 (nan included), or None. ``rows``: the rows' labels, named when they are more than numbers."""
    sums = weights.sum(-1).tolist()
    off = next((i for i, s in enumerate(sums) if not abs(s - 1) <= 1e-3), None)
    if off is None:
        return None
    label = f" ({rows[off]})" if rows and rows[off] != str(off) else ""
    return f"row {off}{label} sums to {sums[off]:.2f}"


# ---------------------------------------------------------------- a layer's own attention weights

class _Attention(torch.overrides.TorchFunctionMode):
    """Notes every softmax over a square last pair of dims (a layer's attention weights), and the
    weights ``F.scaled_dot_product_attention`` computes without showing them."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[torch.Tensor] = []

    def __torch_function__(self, func: Callable[..., Any], types: Collection[type], args: Sequence[Any] = (),
                           kwargs: Mapping[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if name == "softmax" and type(out) is torch.Tensor and out.dim() >= 2 and out.shape[-1] == out.shape[-2]:
            self.seen.append(out.detach().clone())
        elif name == "scaled_dot_product_attention":  # the mode is off inside its own handler: no recursion
            self.seen.append(_sdpa_weights(*args, **kwargs))
        return out


def _sdpa_weights(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor | None = None,
                  attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0, is_causal: bool = False,
                  scale: float | None = None, **_: object) -> torch.Tensor:
    """The weights ``F.scaled_dot_product_attention`` used (before its dropout)."""
    with torch.no_grad():
        q, k = query.detach(), key.detach()
        if k.shape[-3:-2] != q.shape[-3:-2] and q.dim() == 4 and q.shape[1] % k.shape[1] == 0:
            k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)  # grouped heads (enable_gqa)
        scores = q @ k.transpose(-2, -1) * (scale if scale is not None else q.shape[-1] ** -0.5)
        n, s = scores.shape[-2:]
        if is_causal:
            scores = scores.masked_fill(torch.ones(n, s, dtype=torch.bool, device=scores.device).triu(1), -torch.inf)
        if attn_mask is not None:
            mask = attn_mask.detach()
            scores = scores.masked_fill(~mask, -torch.inf) if mask.dtype == torch.bool else scores + mask
        return torch.softmax(scores, dim=-1)


def attention_of(call: Callable[..., object], *args: object, **kwargs: object) -> tuple[object, torch.Tensor | None]:
    """Run ``call(*args, **kwargs)`` on a batch of ONE sequence and return (its output, the
    attention weights it computed: (n, n), or (heads, n, n) for several heads, or None when it
    computed none that could be seen). A layer made of separate heads (stage 4's wrapper) computes
    one softmax per head: they are stacked as its heads."""
    with torch.no_grad(), _Attention() as mode:
        out = call(*args, **kwargs)
    if not mode.seen:
        return out, None
    last = mode.seen[-1]
    alike = [w for w in mode.seen if w.shape == last.shape]
    if last.dim() == 4:  # (batch, heads, n, n)
        return out, last[0]
    if last.dim() == 3 and last.shape[0] == 1:  # (batch, n, n): one head per softmax
        return out, torch.stack([w[0] for w in alike]) if len(alike) > 1 else last[0]
    return out, last  # (n, n), or (heads, n, n) computed in one softmax


def _heads(weights: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    """(title suffix, matrix) per head of ``weights``: (n, n) or (heads, n, n)."""
    w = weights.detach().to("cpu", torch.float64)
    while w.dim() > 3:
        w = w[0]
    if w.dim() == 2:
        return [("", w)]
    if w.shape[0] == 1:
        return [("", w[0])]
    return [(f", head {h}", w[h]) for h in range(w.shape[0])]


def weight_pictures(weights: torch.Tensor, tokens: Sequence[str] = TOKENS, title: str = "your attention weights",
                    causal: bool = False, expected: torch.Tensor | None = None) -> Pictures:
    """One heatmap per head of ``weights`` (rows: the query token, columns: the key token). With
    ``causal``, cells above the diagonal are outlined (they must be 0) and red where they are not.
    ``expected``: the book's printed weights, drawn beside for comparison (public numbers only)."""
    found = Pictures()
    for suffix, w in _heads(weights):
        n_q, n_k = w.shape
        rows = list(tokens) if len(tokens) == n_q else [str(i) for i in range(n_q)]
        cols = list(tokens) if len(tokens) == n_k else [str(i) for i in range(n_k)]
        future = torch.ones(n_q, n_k, dtype=torch.bool).triu(1) if causal else None
        flagged = future & (w.abs() > 1e-6) if future is not None else None
        off = row_sum_problem(w, rows)
        note = (f"{off}; every row of attention weights sums to 1" if off else
                "each row sums to 1" + ("; outlined: the future, which must get 0" if causal else ""))
        found.append(heatmap(w, rows, cols, title + suffix, forbidden=future, flagged=flagged, scale=1.0, note=note))
    if expected is not None:
        n_q, n_k = expected.shape
        found.append(heatmap(expected, rows, cols, "the book's weights", scale=1.0,
                             forbidden=torch.ones(n_q, n_k, dtype=torch.bool).triu(1) if causal else None))
    return found


def show_attention(layer_or_function: Callable[..., object], inputs: torch.Tensor | None = None,
                   tokens: Sequence[str] = TOKENS, causal: bool | None = None) -> Pictures:
    """Draw the attention weights of ``layer_or_function`` for the book's sentence ("Your journey
    starts with one step"), with the tokens as labels: a function of stage 1 or 3 that returns
    weights (called on the inputs), or any attention layer (called on a batch of the sentence).

    In a notebook the pictures show inline; elsewhere ``.save(...)`` each one, or read ``.svg``::

        show_attention(attention_weights_all)
        show_attention(CausalAttention(3, 2, 6, 0.0))

    ``causal`` (default: whether the name of the layer or function says so) outlines the cells
    a causal layer must keep at 0.
    """
    if inputs is None:
        try:
            from .book import INPUTS
        except ImportError:  # beside the public checks, where book.py is a module of its own
            from book import INPUTS  # type: ignore[no-redef]  # the same INPUTS, from the copy of book.py
        inputs = INPUTS
    name = getattr(layer_or_function, "__name__", type(layer_or_function).__name__)
    if causal is None:
        causal = any(word in name.lower() for word in ("causal", "multihead", "grouped", "fast", "decoder", "window",
                                                         "latent"))
    if isinstance(layer_or_function, torch.nn.Module):
        layer_or_function.eval()
        out, weights = attention_of(layer_or_function, inputs.unsqueeze(0))
    else:
        out, weights = attention_of(layer_or_function, inputs)
        if type(out) is torch.Tensor and out.dim() >= 2 and out.shape[-1] == out.shape[-2] == inputs.shape[0]:
            weights = out  # a function that returns the weights themselves (after any mask)
    if weights is None:
        raise ValueError(f"{name} computed no attention weights that could be seen: it called no softmax over a "
                         "square matrix of scores (nor F.scaled_dot_product_attention)")
    return weight_pictures(weights, tokens, f"{name}: who attends to whom", causal=causal)


# ---------------------------------------------------------------- the heads of a whole model (stage 10)

def attention_by_block(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """The attention weights of every block of a GPT (``model.trf_blocks``, each with an ``att``) for the
    token ids ``ids`` (1, n): each block's own attention layer, run again by ``attention_of`` on what the
    model gave it. Returns (layers, heads, n, n)."""
    blocks = getattr(model, "trf_blocks", None)
    if not isinstance(blocks, (torch.nn.Sequential, torch.nn.ModuleList)):
        raise ValueError("the model has no trf_blocks to look into")
    given: list[tuple[torch.nn.Module, torch.Tensor]] = []
    # b.att is a Module, as the condition below says: mypy cannot see it through getattr
    hooks = [b.att.register_forward_pre_hook(lambda layer, args: given.append((layer, args[0])))  # type: ignore[union-attr]
             for b in blocks if isinstance(getattr(b, "att", None), torch.nn.Module)]
    try:
        with torch.no_grad():
            model(ids)
    finally:
        for hook in hooks:
            hook.remove()
    found: list[torch.Tensor] = []
    for layer, x in given:
        _, weights = attention_of(layer, x)
        if weights is None or weights.dim() != 3:
            raise ValueError("the attention weights of a block could not be seen")
        found.append(weights)
    return torch.stack(found)


def _diagonal_share(w: torch.Tensor, back: int) -> float:
    """How much of its attention each query gives the key ``back`` tokens before it, on average."""
    return float(w.diagonal(-back, dim1=-2, dim2=-1).mean()) if back < w.shape[-1] else 0.0


def head_pictures(weights: torch.Tensor, labels: Sequence[str], period: int | None = None,
                  every: bool = False) -> Pictures:
    """Heatmaps of a model's heads, ``weights`` (layers, heads, n, n), with ``labels`` for the tokens. By
    default two: the first layer's head that looks most at the previous token, and, for text that repeats
    every ``period`` tokens, the last layer's head that looks most at the token after the earlier copy of
    the current one (an induction head). ``every``: all heads."""
    w = weights.detach().to("cpu", torch.float64)
    labels = [("\u2423" if t == " " else t) for t in labels]
    if every:
        chosen = [(layer, head, "") for layer in range(w.shape[0]) for head in range(w.shape[1])]
    else:
        previous = max(range(w.shape[1]), key=lambda h: _diagonal_share(w[0, h], 1))
        chosen = [(0, previous, "the previous-token head: each character looks at the one before it")]
        if period:
            last = w.shape[0] - 1
            induction = max(range(w.shape[1]), key=lambda h: _diagonal_share(w[last, h], period - 1))
            chosen.append((last, induction, f"an induction head: each character looks at what came after it "
                                            f"last time, {period - 1} tokens back"))
    found = Pictures()
    for layer, head, what in chosen:
        found.append(heatmap(w[layer, head], labels, labels, f"layer {layer}, head {head}", scale=1.0, kind="heads",
                             forbidden=torch.ones_like(w[layer, head], dtype=torch.bool).triu(1),
                             note=what or "outlined: the future, which a causal head never sees"))
    return found
