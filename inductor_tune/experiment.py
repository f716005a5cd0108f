"""Experiment YAML files: what to tune and how, validated before anything runs."""

from __future__ import annotations

import dataclasses
import math
import os
import re
from typing import Any, Sequence


from .kernels import CATALOG
from .problem import DTYPE_NAMES, Problem, Shape
from .records import TimingSpec
from .runtime.rulefile import read_yaml

SAMPLERS = ("tpe", "random", "grid", "cmaes", "gp")


class ExperimentError(ValueError):
    """Bad experiment file or override; the message is the one line the user sees."""


@dataclasses.dataclass(frozen=True)
class Experiment:
    name: str
    kernels: tuple[str, ...]
    shapes: tuple[Shape, ...]
    dtypes: tuple[str, ...]
    trials: int = 40
    timeout_s: float | None = None  # wall-time budget per study
    sampler: str = "tpe"
    seed: int = 0
    storage: str | None = None
    workers: int | None = None
    trial_timeout_s: float = 120.0
    finalists: int = 3
    rounds: int = 3
    timing: TimingSpec = TimingSpec()
    description: str = ""
    heartbeat_s: int = 10  # in-flight trials refresh their Optuna heartbeat this often
    stale_after_s: int = 120  # a RUNNING trial without a heartbeat this long has lost its process
    grid: tuple[tuple[str, tuple[Any, ...]], ...] = ()  # sub-grid of the space (field -> values)
    sweep: bool = False  # measure every legal config of the (sub-)grid, in studies of their own
    # A fresh sampled study first measures the winners of up to this many finished studies of other
    # shapes (search.Tuner._warm_start); 0: none.
    warm_start: int = 3
    # An explicit list of (kernel, shape) problems instead of kernels x shapes, so that problems of
    # many kernels at unrelated shapes (a best-found sample) run in one process: a `tune` call's fixed
    # cost (workers, imports) is most of a single study's time.
    pairs: tuple[tuple[str, Shape], ...] = ()
    # A kernel role (``space.slot_role``, e.g. ``split`` or ``column``): each study varies only that kernel of
    # its problem and leaves the others to Inductor, so a trial's time is that kernel's evidence alone.
    focus: str = ""

    @property
    def storage_url(self) -> str:
        return self.storage or f"sqlite:///db/{self.name}.sqlite"

    def problems(self):
        if self.pairs:
            return [Problem(k, s, d, self.seed) for k, s in self.pairs for d in self.dtypes]
        return [Problem(k, s, d, self.seed) for k in self.kernels for d in self.dtypes for s in self.shapes]


_KEYS = {f.name for f in dataclasses.fields(Experiment)} - {"timeout_s", "trial_timeout_s", "timing", "heartbeat_s",
                                                            "stale_after_s", "sweep", "pairs"}
_KEYS |= {"timeout", "trial_timeout", "measure", "heartbeat", "stale_after", "problems"}
_MEASURE_KEYS = {"warmup_ms", "rep_ms", "cuda_graph"}


def _as_list(value: Any, key: str) -> list:
    if isinstance(value, str):
        return [v for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple)):
        return list(value)
    raise ExperimentError(f"'{key}' must be a list or a comma-separated string, got {type(value).__name__}")


def parse_kernels(value: Any) -> tuple[str, ...]:
    names = [str(v).strip() for v in _as_list(value, "kernels")]
    unknown = [n for n in names if n not in CATALOG]
    if unknown:
        raise ExperimentError(f"unknown kernel(s) {', '.join(unknown)}; known: {', '.join(CATALOG)}")
    if not names:
        raise ExperimentError("'kernels' is empty")
    return tuple(dict.fromkeys(names))


MAX_DIM = 2**40


def parse_shapes(value: Any) -> tuple[Shape, ...]:
    shapes = []
    for item in _as_list(value, "shapes"):
        if isinstance(item, (int, float)):  # YAML reads 0x8 as hexadecimal 8
            raise ExperimentError(f"shape {item!r} is a single number; write MxN, e.g. 32768x4096, quoted if needed")
        try:
            if isinstance(item, (list, tuple)) and len(item) == 2:
                # Integers (or their ASCII digits): int() would also truncate 4.5, and fail on .inf.
                if not all((isinstance(v, int) and not isinstance(v, bool))
                           or (isinstance(v, str) and v.isascii() and v.isdigit()) for v in item):
                    raise ValueError
                shape = Shape(int(item[0]), int(item[1]))
                if shape.rows <= 0 or shape.cols <= 0:
                    raise ValueError
            else:
                shape = Shape.parse(str(item))
        except (ValueError, TypeError):
            raise ExperimentError(f"shape {item!r} is not MxN with positive integers, e.g. 32768x4096") from None
        if max(shape.rows, shape.cols) > MAX_DIM:
            # Stored as 64-bit integers, and far beyond any GPU's memory: a typo, not a problem size.
            raise ExperimentError(f"shape {item!r}: each dimension must be at most {MAX_DIM} (2**40)")
        shapes.append(shape)
    if not shapes:
        raise ExperimentError("'shapes' is empty")
    return tuple(dict.fromkeys(shapes))


def parse_problems(value: Any) -> tuple[tuple[str, Shape], ...]:
    """'kernel MxN' items, e.g. ``rmsnorm_fwd 10x14896``."""
    pairs = []
    for item in _as_list(value, "problems"):
        parts = str(item).split()
        if len(parts) != 2:
            raise ExperimentError(f"problem {item!r} is not 'kernel MxN', e.g. 'rmsnorm_fwd 32768x4096'")
        pairs.append((parse_kernels([parts[0]])[0], parse_shapes([parts[1]])[0]))
    if not pairs:
        raise ExperimentError("'problems' is empty")
    return tuple(dict.fromkeys(pairs))


def parse_dtypes(value: Any) -> tuple[str, ...]:
    names = [str(v).strip() for v in _as_list(value, "dtypes")]
    unknown = [n for n in names if n not in DTYPE_NAMES]
    if unknown or not names:
        raise ExperimentError(f"unknown dtype(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(DTYPE_NAMES)}")
    return tuple(dict.fromkeys(names))


def _positive(value: Any, key: str, kind=int, allow_none: bool = False):
    if value is None and allow_none:
        return None
    try:
        number = kind(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: int(.inf)
        raise ExperimentError(f"'{key}' must be a positive number, got {value!r}") from None
    # nan compares false with everything: a nan timeout would never expire, a nan warmup never end.
    if isinstance(value, bool) or not math.isfinite(number) or number <= 0:
        raise ExperimentError(f"'{key}' must be a positive number, got {value!r}")
    return number


def _non_negative(value: Any, key: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ExperimentError(f"'{key}' must be a non-negative integer, got {value!r}")
    return value


def parse_grid(value: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    from .space import FLAG_GRID_FIELDS, GRID_FIELDS

    if value is None:
        return ()
    if not isinstance(value, dict) or not value:
        raise ExperimentError("'grid' must be a mapping of field to a list of values, e.g. {log2_num_warps: [2, 3, 4]}")
    out = []
    for field, values in value.items():
        if field not in GRID_FIELDS:
            raise ExperimentError(f"unknown grid field {field!r}; known: {', '.join(GRID_FIELDS)}")
        if not isinstance(values, list) or not values:
            raise ExperimentError(f"grid field {field!r} must be a non-empty list of values")
        boolean = field in FLAG_GRID_FIELDS or field == "persistent"
        if any(isinstance(v, bool) != boolean or not isinstance(v, (bool, int)) for v in values):
            kind = "true/false" if boolean else "integers (exponents for log2_* fields)"
            raise ExperimentError(f"grid field {field!r} takes {kind}, got {values!r}")
        out.append((field, tuple(dict.fromkeys(values))))
    return tuple(sorted(out))


# The name becomes the default storage file db/<name>.sqlite and is stored with every study: a plain
# slug, so that no experiment can place its database outside db/ ('../x') or anywhere absolute.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def check_name(name: Any, from_file: bool = False) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        hint = " (taken from the file name; set `name:` in the file)" if from_file else ""
        raise ExperimentError(f"experiment name {name!r}{hint} must be letters, digits, '.', '_' or '-' "
                              "(at most 100, no '..'), e.g. quack")
    return name


def from_mapping(data: Any, name: str) -> Experiment:
    if not isinstance(data, dict):
        raise ExperimentError("experiment file must be a YAML mapping of keys to values")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ExperimentError(f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_KEYS))}")
    if "problems" in data:
        if "kernels" in data or "shapes" in data:
            raise ExperimentError("'problems' replaces 'kernels' and 'shapes'; give one or the other")
        pairs = parse_problems(data["problems"])
        data = {**data, "kernels": [k for k, _ in pairs], "shapes": [str(s) for _, s in pairs]}
    else:
        pairs = ()
    for key in ("kernels", "shapes", "dtypes"):
        if key not in data:
            raise ExperimentError(f"missing required key '{key}'")
    measure = data.get("measure") or {}
    if not isinstance(measure, dict) or set(measure) - _MEASURE_KEYS:
        raise ExperimentError(f"'measure' takes only {', '.join(sorted(_MEASURE_KEYS))}")
    timing = TimingSpec(
        warmup_ms=_positive(measure.get("warmup_ms", TimingSpec.warmup_ms), "measure.warmup_ms", float),
        rep_ms=_positive(measure.get("rep_ms", TimingSpec.rep_ms), "measure.rep_ms", float),
        cuda_graph=bool(measure.get("cuda_graph", True)),
    )
    sampler = str(data.get("sampler", "tpe"))
    if sampler not in SAMPLERS:
        raise ExperimentError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")
    seed = _non_negative(data.get("seed", 0), "seed")
    storage = data.get("storage")
    if storage is not None and not isinstance(storage, str):
        raise ExperimentError(f"'storage' must be a database URL or file, got {storage!r}")
    return Experiment(
        name=check_name(data["name"]) if data.get("name") is not None else check_name(name, from_file=True),
        kernels=parse_kernels(data["kernels"]),
        shapes=parse_shapes(data["shapes"]),
        dtypes=parse_dtypes(data["dtypes"]),
        trials=_positive(data.get("trials", 40), "trials"),
        timeout_s=_positive(data.get("timeout"), "timeout", float, allow_none=True),
        sampler=sampler,
        seed=seed,
        storage=storage,
        workers=_positive(data.get("workers"), "workers", allow_none=True),
        trial_timeout_s=_positive(data.get("trial_timeout", 120), "trial_timeout", float),
        finalists=_positive(data.get("finalists", 3), "finalists"),
        rounds=_positive(data.get("rounds", 3), "rounds"),
        timing=timing,
        description=str(data.get("description", "")),
        heartbeat_s=_positive(data.get("heartbeat", 10), "heartbeat"),
        stale_after_s=_positive(data.get("stale_after", 120), "stale_after"),
        grid=parse_grid(data.get("grid")),
        warm_start=_non_negative(data.get("warm_start", Experiment.warm_start), "warm_start"),
        pairs=pairs,
        focus=parse_focus(data.get("focus")),
    )


def parse_focus(value: Any) -> str:
    from .space import SLOT_ROLES

    if value is None:
        return ""
    base, sep, nth = str(value).partition("#")
    if base not in SLOT_ROLES or (sep and not (nth.isascii() and nth.isdigit() and int(nth) >= 1)):
        raise ExperimentError(f"'focus' must be a kernel role ({', '.join(SLOT_ROLES)}), optionally with #N for the "
                              f"N-th such kernel, e.g. split#2; got {value!r}")
    return str(value)


def load(path: str) -> Experiment:
    if os.path.isdir(path):
        raise ExperimentError(f"experiment file {path} is a directory; name a YAML file, e.g. experiments/quack.yaml")
    if not os.path.isfile(path):
        raise ExperimentError(f"experiment file {path} does not exist")
    data = read_yaml(path, ExperimentError)
    return from_mapping(data, os.path.splitext(os.path.basename(path))[0])


def with_overrides(exp: Experiment, **overrides: Any) -> Experiment:
    """Apply command-line overrides (None means: keep the file's value)."""
    parsers = {"kernels": parse_kernels, "shapes": parse_shapes, "dtypes": parse_dtypes}
    changes: dict[str, Any] = {}
    for key, value in overrides.items():
        if value is None:
            continue
        if key in parsers:
            value = parsers[key](value)
        elif key == "sampler" and value not in SAMPLERS:
            raise ExperimentError(f"unknown sampler {value!r}; choose one of {', '.join(SAMPLERS)}")
        elif key in ("trials", "workers", "finalists", "rounds", "heartbeat_s", "stale_after_s"):
            value = _positive(value, key)
        elif key in ("warm_start", "seed"):
            value = _non_negative(value, key)
        elif key in ("timeout_s", "trial_timeout_s"):
            value = _positive(value, key.replace("_s", ""), float)
        changes[key] = value
    if exp.pairs and "shapes" in changes:
        raise ExperimentError(f"experiment {exp.name} lists its problems; --shapes does not apply to it")
    if exp.pairs and "kernels" in changes:  # a subset of the listed problems
        pairs = tuple((k, s) for k, s in exp.pairs if k in changes["kernels"])
        if not pairs:
            raise ExperimentError(f"none of experiment {exp.name}'s problems is of kernel(s) "
                                  f"{', '.join(changes['kernels'])}")
        changes["pairs"] = pairs
        changes["kernels"] = tuple(dict.fromkeys(k for k, _ in pairs))
        changes["shapes"] = tuple(dict.fromkeys(s for _, s in pairs))
    return dataclasses.replace(exp, **changes)


def quack_shapes() -> Sequence[Shape]:
    return [Shape(32768, 1 << k) for k in range(8, 17)] + [Shape(16384, 131072), Shape(8192, 262144)]
