"""A picture of a heuristic file: kernel family x size bucket, what each rule does and what it gained.

Rows are kernel families (the reductions and envelope a rule matches, named by the kernels its
evidence measured), columns the ``next_pow2(rnumel)`` buckets.  A cell is a rule: coloured by the
in-sample gain of its config (the file's evidence) on the same robust scale as the speedup heatmap,
light grey where it keeps Inductor's default, blank where no rule applies (Inductor decides).
Everything drawn is read from the file.
"""

from __future__ import annotations

import collections
import dataclasses
import textwrap
from typing import Sequence

from .plotkit import COLORS, RATIO_CMAP, empty, kernel_order, ratio_colorbar, ratio_norm, short, text_color

KEEP = "keep default"


@dataclasses.dataclass(frozen=True)
class RuleCell:
    """One rule of a heuristic file, placed in the picture."""

    index: int  # position in the file, from 1: the first matching rule applies
    family: str  # the row it is drawn in
    kind: str
    rnumel: tuple[int, int]  # next_pow2(rnumel) range: the columns it spans
    xnumel: tuple[int, int]
    config: str | None  # short text of its launch config; None: keep Inductor's default
    gain: float | None  # evidence: geomean speedup of its config (keep default: of the best candidate not adopted)
    shapes: int  # fitting shapes of its evidence


def short_config(cfg) -> str:
    """A rule's config in two short lines (a ``SlotConfig``)."""
    lines = ["persistent", f"X{cfg.XBLOCK} w{cfg.num_warps}"] if cfg.persistent else [
        "looped", f"R0={cfg.R0_BLOCK} X{cfg.XBLOCK}", f"w{cfg.num_warps} st{cfg.num_stages}"]
    if cfg.RSPLIT_SIZE is not None:
        lines.append(f"split {cfg.RSPLIT_SIZE} S{cfg.NUM_STAGES}")
    return "\n".join(lines)


def _kernels(rule) -> tuple[str, ...]:
    names = {s.split()[0] for s in rule.evidence.shapes if s.split()}
    return tuple(sorted(names, key=lambda k: (kernel_order(k), k)))


def rule_cells(heur) -> list[RuleCell]:
    """Every rule of ``heur`` (a ``Heuristics``) as a cell; rules of one family that would share a cell
    are told apart by their kind, then their xnumel range, then their place in the file."""
    rules = list(heur.rules)
    sizes = {r.element_size for r in rules}
    keys = [lambda i, r: (r.reductions, r.envelopes, r.element_size),
            lambda i, r: (r.reductions, r.envelopes, r.element_size, r.kind),
            lambda i, r: (r.reductions, r.envelopes, r.element_size, r.kind, r.xnumel),
            lambda i, r: (i,)]
    for level, key in enumerate(keys):
        taken = collections.Counter((key(i, r), b) for i, r in enumerate(rules) for b in _buckets(r.rnumel))
        if all(n == 1 for n in taken.values()):
            break
    members = collections.defaultdict(list)
    for i, r in enumerate(rules):
        members[key(i, r)].append((i, r))
    names = {k: _family_name(rs, len(sizes) > 1, level) for k, rs in members.items()}
    return [RuleCell(i + 1, names[key(i, r)], r.kind, tuple(r.rnumel), tuple(r.xnumel),
                     short_config(r.config) if r.config else None, r.evidence.gain_geomean, len(r.evidence.shapes))
            for i, r in enumerate(rules)]


def _family_name(members, with_size: bool, level: int) -> str:
    """The row label: the kernels the rules' evidence measured, and what tells the row from its neighbours."""
    first = members[0][1]
    kernels = sorted({k for _, r in members for k in _kernels(r)}, key=lambda k: (kernel_order(k), k))
    text = ", ".join(kernels) or f"{first.kind} {first.reductions or 'any reduction'}"
    extra = [f"{first.element_size}B"] if with_size else []
    extra += [first.kind] if level in (1, 2) else []
    extra += [f"x {first.xnumel[0]}..{first.xnumel[1]}"] if level == 2 else []
    extra += [f"rule {members[0][0] + 1}"] if level == 3 else []
    return text + (f" [{', '.join(extra)}]" if extra else "")


def _buckets(rnumel: tuple[int, int]) -> list[int]:
    out, b = [], rnumel[0]
    while b <= rnumel[1]:
        out.append(b)
        b *= 2
    return out


def plot_heuristics(ax, heur, cells: Sequence[RuleCell] | None = None, title: str | None = None):
    """The picture of a heuristic file (``cells`` default to ``rule_cells(heur)``) on ``ax``."""
    from matplotlib.patches import Rectangle

    cells = list(rule_cells(heur) if cells is None else cells)
    if not cells:
        return empty(ax, "the file holds no rules")
    order = sorted({c.family for c in cells}, key=lambda f: (kernel_order(f.split(",")[0].split(" [")[0]), f))
    columns = sorted({b for c in cells for b in _buckets(c.rnumel)})
    columns = _buckets((columns[0], columns[-1]))
    norm = ratio_norm([c.gain for c in cells if c.config])
    from matplotlib import colormaps

    cmap = colormaps[RATIO_CMAP]
    for c in cells:
        y, x0 = order.index(c.family), columns.index(c.rnumel[0])
        width = len(_buckets(c.rnumel))
        face = COLORS["keep"] if c.config is None else (cmap(norm(c.gain)) if c.gain else "white")
        ax.add_patch(Rectangle((x0 - 0.5, y - 0.5), width, 1, facecolor=face, edgecolor="white", lw=1.5))
        if c.config is None:
            text = KEEP + (f"\n({c.gain:.2f}x)" if c.gain else "")
            color = "black"
        else:
            text = c.config + (f"\n{c.gain:.2f}x" if c.gain else "")
            color = text_color(norm, c.gain)
        ax.text(x0 + (width - 1) / 2, y, text, ha="center", va="center", fontsize=6.5, color=color, linespacing=1.1)
    ax.set_xlim(-0.5, len(columns) - 0.5)
    ax.set_ylim(len(order) - 0.5, -0.5)
    ax.set_xticks(range(len(columns)), [short(b) for b in columns])
    ax.set_yticks(range(len(order)), ["\n".join(textwrap.wrap(f, 34)) for f in order], fontsize="small")
    ax.set_xlabel("next_pow2(N): the reduction-length bucket a rule covers")
    configs = sum(c.config is not None for c in cells)
    ax.set_title(title or f"{len(cells)} rules ({configs} set a config, {len(cells) - configs} keep Inductor's "
                 f"default) for {heur.gpu.name}, digest {heur.digest()}", fontsize="medium")
    from matplotlib.cm import ScalarMappable

    ratio_colorbar(ax, ScalarMappable(norm=norm, cmap=cmap), [c.gain for c in cells if c.config],
                   "gain of the rule's config over Inductor's default (in-sample, x)", fraction=0.025, aspect=40)
    return ax
