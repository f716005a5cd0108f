"""The search space: declared once, Optuna distributions and constraints derived from it.

A compiled function yields one or more reduction kernels ("slots").  Their list depends on two
graph-level Inductor settings (split reductions, mix-order fusion), so a study first probes the
slot list for each setting combination (see ``evaluate.probe``) and the space is built from those
structures.  Per slot the tunables are the launch parameters Inductor itself chooses:

* ordinary reductions: persistent or looped, XBLOCK, R0_BLOCK (looped only), num_warps,
  num_stages (looped only: a persistent kernel has no loop to pipeline);
* the fused mix-order backward kernel (always persistent in Inductor): its split size
  (RSPLIT_SIZE), XBLOCK, NUM_STAGES and num_warps.

The reduction hint is deliberately not a dimension: with the config forced, it no longer selects
anything (it only chooses among Inductor's own candidate configs and feeds the persistent
threshold, both of which the forced config replaces), so it cannot change the generated kernel.

Powers of two are searched as integer exponents so that ordinal samplers (CMA-ES, GP) see their
order.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from typing import Any, Iterable, Mapping

import optuna

from .kernels import next_pow2
# The launch configs and their limits are the runtime's (a rule file's configs are checked by them).
from .runtime.launch import (  # noqa: F401 - re-exported from their old home
    LAUNCH_FIELDS, LOOPED_FIELDS, MAX_ELEMENTS_PER_THREAD, MAX_TILE_ELEMENTS, MIX_ORDER_FIELDS, PERSISTENT_FIELDS,
    POW2_FIELDS, KernelSlot, SlotConfig, search_param, slot_violations,
)

MAX_LOG2_XBLOCK = 8  # 256 rows per program is already far past any useful reduction tile
MAX_LOG2_R0_BLOCK = 15
MIN_LOG2_R0_BLOCK = 4
MAX_LOG2_WARPS = 5  # 32 warps = 1024 threads, CUDA's per-block limit
MAX_NUM_STAGES = 4
MIX_SPLIT_LOG2 = (4, 8)  # RSPLIT_SIZE 16..256 (Inductor clamps its own choice to 16..128)
MIX_MAX_LOG2_XBLOCK = 5
# XBLOCK=1 makes a forced mix-order kernel take the no-x-dim codegen path, which fails in torch 2.11
# ("list indices must be integers or slices, not NoneType" in get_block_shape; seen on an H200).
MIX_MIN_LOG2_XBLOCK = 1
MIX_MAX_NUM_STAGES = 3


@dataclasses.dataclass(frozen=True)
class GraphFlags:
    """Graph-level Inductor settings that change which kernels are generated."""

    split_reductions: bool = True
    mix_order_reduction: bool = True

    def inductor_config(self) -> dict[str, Any]:
        return {"split_reductions": self.split_reductions, "triton.mix_order_reduction": self.mix_order_reduction}


DEFAULT_FLAGS = GraphFlags()


@dataclasses.dataclass(frozen=True)
class TrialConfig:
    """Everything one trial forces.  ``inductor_default`` means: force nothing, measure Inductor."""

    flags: GraphFlags = DEFAULT_FLAGS
    slots: tuple[tuple[str, SlotConfig], ...] = ()
    inductor_default: bool = False

    def slot_map(self) -> dict[str, SlotConfig]:
        return dict(self.slots)

    def to_json(self) -> str:
        return json.dumps(
            {
                "inductor_default": self.inductor_default,
                "flags": dataclasses.asdict(self.flags),
                "slots": {k: dataclasses.asdict(v) for k, v in self.slots},
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> "TrialConfig":
        data = json.loads(text)
        slots = tuple((k, SlotConfig(**v)) for k, v in sorted(data["slots"].items()))
        return cls(GraphFlags(**data["flags"]), slots, bool(data["inductor_default"]))

    def describe(self) -> str:
        if self.inductor_default:
            return "inductor default"
        parts = []
        if self.flags != DEFAULT_FLAGS:
            parts.append(
                f"split_reductions={self.flags.split_reductions} mix_order={self.flags.mix_order_reduction}"
            )
        parts += [f"{k}: {v.describe()}" for k, v in self.slots]
        return "; ".join(parts)


INDUCTOR_DEFAULT = TrialConfig(inductor_default=True)


class ConstraintViolation(Exception):
    """A sampled combination that can never be a valid kernel; it is recorded, never measured."""


# Fields a sub-grid may restrict: the slot parameters (for every slot that has them) and the flags.
SLOT_GRID_FIELDS = tuple(search_param(f) for f in LAUNCH_FIELDS)
FLAG_GRID_FIELDS = ("split_reductions", "mix_order_reduction")
GRID_FIELDS = SLOT_GRID_FIELDS + FLAG_GRID_FIELDS


@dataclasses.dataclass(frozen=True)
class SearchSpace:
    """Slot structures per graph-flag combination, as probed on the GPU for one kernel/shape/dtype.

    ``grid`` optionally narrows the space to a declared sub-grid (field -> allowed values, applied
    to every slot that has the field): sweeps measure every legal config of it, and samplers
    replaying a sweep draw from the same values.
    """

    structures: tuple[tuple[GraphFlags, tuple[KernelSlot, ...]], ...]
    grid: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    # A focused space (``focused``) varies only these kernels of Inductor's default graph flags; every other
    # kernel keeps Inductor's own config, so a trial's time changes by this kernel's config alone.
    focus: tuple[str, ...] = ()

    def structure(self, flags: GraphFlags) -> tuple[KernelSlot, ...]:
        return dict(self.structures)[flags]

    @property
    def tunable_flags(self) -> dict[str, tuple[bool, ...]]:
        """Graph flags worth searching: only those whose values produce different kernels (none when focused:
        other flags generate other kernels)."""
        if self.focus:
            return {}
        by_flags = dict(self.structures)
        out: dict[str, tuple[bool, ...]] = {}
        for field in ("split_reductions", "mix_order_reduction"):
            values = {getattr(f, field) for f in by_flags}
            if len(values) < 2:
                continue
            others = [f for f in by_flags if getattr(f, field) == getattr(DEFAULT_FLAGS, field)]
            changed = any(
                by_flags.get(dataclasses.replace(f, **{field: not getattr(f, field)})) != by_flags[f] for f in others
            )
            if changed:
                allowed = dict(self.grid).get(field, (True, False))
                out[field] = tuple(v for v in (True, False) if v in allowed)
        return out

    def _flag_choice_params(self) -> dict[str, tuple[bool, ...]]:
        """Flags the sampler chooses (more than one value left)."""
        return {f: c for f, c in self.tunable_flags.items() if len(c) > 1}

    def reachable_structures(self) -> list[tuple[GraphFlags, tuple[KernelSlot, ...]]]:
        """The structures whose flags the space can choose (flags with no effect stay at the default)."""
        choices = self.tunable_flags
        return [
            (flags, self._tuned(slots)) for flags, slots in self.structures
            if all(getattr(flags, f) in choices.get(f, (getattr(DEFAULT_FLAGS, f),)) for f in FLAG_GRID_FIELDS)
        ]

    def _tuned(self, slots: tuple[KernelSlot, ...]) -> tuple[KernelSlot, ...]:
        return tuple(s for s in slots if s.key in self.focus) if self.focus else slots

    def focused(self, role: str, rows: int, cols: int) -> "SearchSpace":
        """This space varying only the kernel of ``role`` (``slot_role``; ``split#2``: the second such kernel) of
        Inductor's default flags for a rows x cols problem; ValueError where the problem has no such kernel."""
        base, _, nth = role.partition("#")
        if base not in SLOT_ROLES:
            raise ValueError(f"unknown kernel role {role!r}; known: {', '.join(SLOT_ROLES)}")
        matching = [s for s in self.structure(DEFAULT_FLAGS) if slot_role(s, rows, cols) == base]
        index = int(nth or 1) - 1
        if not 0 <= index < len(matching):
            kinds = ", ".join(slot_role(s, rows, cols) for s in self.structure(DEFAULT_FLAGS))
            raise ValueError(f"Inductor's compile at {rows}x{cols} has no {role} kernel (its kernels: {kinds})")
        return dataclasses.replace(self, focus=(matching[index].key,))

    def _fixed_flags(self) -> dict[str, bool]:
        """Flags a sub-grid pins to one value."""
        return {f: c[0] for f, c in self.tunable_flags.items() if len(c) == 1}

    def distributions(self) -> dict[str, optuna.distributions.BaseDistribution]:
        """Every parameter the space can ask for (for documentation, GridSampler-free tooling, tests)."""
        dists: dict[str, optuna.distributions.BaseDistribution] = {}
        for field, choices in self._flag_choice_params().items():
            dists[f"graph.{field}"] = optuna.distributions.CategoricalDistribution(choices)
        for _, slots in self.reachable_structures():
            for slot in slots:
                dists.update(_slot_distributions(slot, self.grid))
        return dists

    def suggest(self, trial: optuna.trial.BaseTrial) -> TrialConfig:
        """Sample a config define-by-run; raises ConstraintViolation for illegal combinations."""
        flag_values = {
            field: trial.suggest_categorical(f"graph.{field}", choices)
            for field, choices in self._flag_choice_params().items()
        }
        flags = dataclasses.replace(DEFAULT_FLAGS, **self._fixed_flags(), **flag_values)
        slots = []
        reasons = []
        for slot in self._tuned(self.structure(flags)):
            cfg = _suggest_slot(trial, slot, self.grid)
            reasons += [f"{slot.key}: {r}" for r in slot_violations(slot, cfg)]
            slots.append((slot.key, cfg))
        if reasons:
            raise ConstraintViolation("; ".join(reasons))
        return TrialConfig(flags, tuple(slots))

    def contains(self, config: TrialConfig) -> bool:
        """Whether ``suggest`` can return ``config``: legal, its flags reachable, every parameter
        inside this space's distributions (the sub-grid included)."""
        if config.inductor_default:
            return False
        params = params_of(config, self)
        dists = self.distributions()
        # FixedTrial only warns about a value outside a distribution, so check the values first.
        if any(name not in dists or not _holds(dists[name], value) for name, value in params.items()):
            return False
        try:
            again = self.suggest(optuna.trial.FixedTrial(params))
        except (ConstraintViolation, ValueError, KeyError):
            return False
        return again.to_json() == config.to_json()

    def enumerate(self, limit: int = 200_000) -> list[TrialConfig]:
        """Every legal config of the space (grid / brute-force search), in a fixed order."""
        configs: list[TrialConfig] = []
        for flags, slots in self.reachable_structures():
            per_slot = [[(slot.key, cfg) for cfg in _legal_slot_configs(slot, self.grid)] for slot in slots]
            if math.prod(len(c) for c in per_slot) + len(configs) > limit:
                raise ValueError(f"the space has more than {limit} legal configs; narrow it for grid search")
            configs += [TrialConfig(flags, combo) for combo in itertools.product(*per_slot)]
        return configs

    def with_grid(self, grid: Mapping[str, Iterable[Any]] | None) -> "SearchSpace":
        """This space narrowed to a sub-grid; raises ValueError for a field that leaves a slot empty."""
        if not grid:
            return self
        grid = dict(grid)
        unknown = sorted(set(grid) - set(GRID_FIELDS))
        if unknown:
            raise ValueError(f"unknown grid field(s) {', '.join(unknown)}; known: {', '.join(GRID_FIELDS)}")
        narrowed = dataclasses.replace(self, grid=tuple(sorted((f, tuple(v)) for f, v in grid.items())))
        for field, choices in narrowed.tunable_flags.items():
            if not choices:
                raise ValueError(f"grid field {field} leaves no value the kernels allow")
        narrowed.distributions()  # raises for a slot the sub-grid leaves without values
        return narrowed

    def to_json(self) -> str:
        structures = [
            {"flags": dataclasses.asdict(f), "slots": [dataclasses.asdict(s) for s in slots]} for f, slots in self.structures
        ]
        if not self.grid and not self.focus:
            return json.dumps(structures)  # the format of databases written before sub-grids existed
        out: dict[str, Any] = {"structures": structures, "grid": {f: list(v) for f, v in self.grid}}
        if self.focus:
            out["focus"] = list(self.focus)
        return json.dumps(out)

    @classmethod
    def from_json(cls, text: str) -> "SearchSpace":
        data = json.loads(text)
        entries, grid = (data, {}) if isinstance(data, list) else (data["structures"], data.get("grid", {}))
        focus = () if isinstance(data, list) else tuple(data.get("focus", ()))
        structures = tuple(
            (GraphFlags(**e["flags"]), tuple(KernelSlot(**s) for s in e["slots"])) for e in entries
        )
        return cls(structures, tuple(sorted((f, tuple(v)) for f, v in grid.items())), focus)


def _slot_distributions(slot: KernelSlot, grid=()) -> dict[str, optuna.distributions.BaseDistribution]:
    IntD, CatD = optuna.distributions.IntDistribution, optuna.distributions.CategoricalDistribution
    x_hi = min(MAX_LOG2_XBLOCK, next_pow2(slot.xnumel).bit_length() - 1)
    k = slot.key
    if slot.mix_order:
        ranges = {
            "RSPLIT_SIZE": IntD(*MIX_SPLIT_LOG2),
            "XBLOCK": IntD(MIX_MIN_LOG2_XBLOCK, min(MIX_MAX_LOG2_XBLOCK, x_hi)),
            "NUM_STAGES": IntD(1, MIX_MAX_NUM_STAGES),
            "num_warps": IntD(0, MAX_LOG2_WARPS),
        }
        fields: tuple[str, ...] = MIX_ORDER_FIELDS
    else:
        r_hi = min(MAX_LOG2_R0_BLOCK, next_pow2(slot.rnumel).bit_length() - 1)
        ranges = {
            "persistent": CatD((True, False) if slot.persistent_allowed else (False,)),
            "XBLOCK": IntD(0, x_hi),
            "R0_BLOCK": IntD(min(MIN_LOG2_R0_BLOCK, r_hi), r_hi),
            "num_warps": IntD(0, MAX_LOG2_WARPS),
            "num_stages": IntD(1, MAX_NUM_STAGES),
        }
        fields = ("persistent", *LOOPED_FIELDS)
    # In the order the search asks for them (which fixes a sampler's stream and a grid's order).
    full = {search_param(f): ranges[f] for f in fields}
    allowed = dict(grid)
    for field, dist in full.items():
        if field in allowed:
            full[field] = _narrow(dist, allowed[field], f"{k}.{field}")
    return {f"{k}.{field}": dist for field, dist in full.items()}


def _narrow(dist: optuna.distributions.BaseDistribution, values, name: str) -> optuna.distributions.BaseDistribution:
    """``dist`` restricted to ``values``; a contiguous integer range stays ordinal for CMA-ES and GP."""
    if isinstance(dist, optuna.distributions.CategoricalDistribution):
        kept = tuple(v for v in dist.choices if v in values)
    else:
        kept = tuple(sorted({int(v) for v in values if not isinstance(v, bool) and dist.low <= v <= dist.high}))
    if not kept:
        raise ValueError(f"the sub-grid leaves {name} no value (allowed here: {_values_of(dist)})")
    if isinstance(dist, optuna.distributions.IntDistribution) and kept == tuple(range(kept[0], kept[-1] + 1)):
        return optuna.distributions.IntDistribution(kept[0], kept[-1])
    return optuna.distributions.CategoricalDistribution(kept)


def _values_of(dist: optuna.distributions.BaseDistribution) -> list:
    if isinstance(dist, optuna.distributions.CategoricalDistribution):
        return list(dist.choices)
    return list(range(dist.low, dist.high + 1))


def _holds(dist: optuna.distributions.BaseDistribution, value: Any) -> bool:
    if isinstance(dist, optuna.distributions.CategoricalDistribution):
        return any(type(c) is type(value) and c == value for c in dist.choices)  # True == 1 in Python
    return type(value) is int and dist.low <= value <= dist.high


def _suggest_slot(trial: optuna.trial.BaseTrial, slot: KernelSlot, grid=()) -> SlotConfig:
    d = _slot_distributions(slot, grid)

    def ask(field: str):
        name = f"{slot.key}.{search_param(field)}"
        value = _suggest(trial, name, d[name])
        return 2 ** value if field in POW2_FIELDS else value

    if slot.mix_order:
        return SlotConfig(persistent=True, **{f: ask(f) for f in MIX_ORDER_FIELDS})
    persistent = ask("persistent")
    return SlotConfig(persistent=persistent, **{f: ask(f) for f in (PERSISTENT_FIELDS if persistent else LOOPED_FIELDS)})


def _legal_slot_configs(slot: KernelSlot, grid=()) -> Iterable[SlotConfig]:
    dists = _slot_distributions(slot, grid)
    names = list(dists)
    values = [_values_of(d) for d in dists.values()]
    seen = set()
    for combo in itertools.product(*values):
        cfg = _suggest_slot(optuna.trial.FixedTrial(dict(zip(names, combo))), slot, grid)
        if cfg not in seen and not slot_violations(slot, cfg):
            seen.add(cfg)  # persistent configs ignore R0_BLOCK/num_stages: one entry each
            yield cfg


def _suggest(trial: optuna.trial.BaseTrial, name: str, dist: optuna.distributions.BaseDistribution):
    if isinstance(dist, optuna.distributions.CategoricalDistribution):
        return trial.suggest_categorical(name, dist.choices)
    return trial.suggest_int(name, dist.low, dist.high)


def params_of(config: TrialConfig, space: SearchSpace) -> dict[str, Any]:
    """Inverse of ``suggest``: the Optuna params that reproduce ``config`` (for enqueue_trial)."""
    params: dict[str, Any] = {}
    for field in space._flag_choice_params():
        params[f"graph.{field}"] = getattr(config.flags, field)
    for key, cfg in config.slots:
        params.update(_slot_params(key, cfg))
    return params


def _slot_params(key: str, cfg: SlotConfig) -> dict[str, Any]:
    if cfg.RSPLIT_SIZE is not None:
        fields: tuple[str, ...] = MIX_ORDER_FIELDS
    else:
        fields = ("persistent", *(PERSISTENT_FIELDS if cfg.persistent else LOOPED_FIELDS))
    # log2 by bit length: exact for the powers of two stored here
    return {f"{key}.{search_param(f)}": int(getattr(cfg, f)).bit_length() - 1 if f in POW2_FIELDS else getattr(cfg, f)
            for f in fields}


def config_from_params(params: Mapping[str, Any], space: SearchSpace) -> TrialConfig:
    """Rebuild a TrialConfig from a finished trial's params (FixedTrial replays suggest)."""
    return space.suggest(optuna.trial.FixedTrial(dict(params)))


def slot_key(backward: bool, mix_order: bool, xnumel: int, rnumel: int, taken: Iterable[str]) -> str:
    """Stable, readable slot name; equal for the same kernel under different graph flags."""
    base = f"{'bw' if backward else 'fw'}.{'mix' if mix_order else 'red'}.x{xnumel}.r{rnumel}"
    key, n = base, 1
    taken = set(taken)
    while key in taken:
        n += 1
        key = f"{base}#{n}"
    return key


# What one kernel of a problem's compile does, from its sizes (``slot_role``).
SLOT_ROLES = ("row", "mix", "split", "combine", "column", "column_split", "other")


def slot_role(slot: KernelSlot, rows: int, cols: int) -> str:
    """The part one kernel plays in a rows x cols problem: ``row`` reduces whole rows, ``mix`` is a fused
    mix-order backward, ``split`` sums parts of each row (Inductor's split reduction, few rows at long N) and
    ``combine`` adds those parts up, ``column`` reduces whole columns (a weight gradient) and ``column_split``
    parts of them."""
    x, r = slot.xnumel, slot.rnumel
    if slot.mix_order:
        return "mix"
    if (x, r) == (rows, cols):
        return "row"
    if (x, r) == (cols, rows):
        return "column"
    if x > rows and x % rows == 0 and r < cols and r * (x // rows) >= cols:
        return "split"
    if x > cols and x % cols == 0 and r < rows and r * (x // cols) >= rows:
        return "column_split"
    if x in (rows, cols) and r < max(rows, cols):
        return "combine"
    return "other"
