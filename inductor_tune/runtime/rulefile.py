"""Reading a rule file: one parser, as strict as what a patched torch and a user's process can take.

``load`` is what ``inductor_tune.install`` and every command that reads a rule file call.  The file's
texts reach generated code (``inductor-tune patch`` writes the GPU's name into a Python module), its
configs are forced into kernels unmeasured, and a user's training run must not fail late on a typo,
so everything is checked here, once, with one line saying what is wrong.
"""

from __future__ import annotations

import os
import re
from typing import Any

import yaml

from . import torch_rules
from .launch import LAUNCH_FIELDS, POW2_FIELDS, STAGE_FIELDS, KernelSlot, SlotConfig, slot_violations
from .rules import (
    FORMAT, KINDS, Evidence, GpuSpec, Heuristics, HeuristicsError, MixAutotuneSpec, MultiKernelSpec, RuleSpec,
    UnsplitSpec,
)


# A shipped rule file carries its evidence (megabytes): libyaml reads it about six times faster than the pure-Python
# loader and writes the same text, with the same safe tags; PyYAML built without libyaml falls back to pure Python.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SAFE_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def read_yaml(path: str, error: type[Exception]) -> Any:
    """A safe YAML load of a file, every way it can fail turned into one line of ``error``."""
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.load(fh, Loader=SAFE_LOADER)
    except OSError as exc:
        raise error(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path} is not a YAML text file (not UTF-8 at byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "nesting depth" in str(problem):  # libyaml's own limit on thousands of nested brackets
            raise _too_deep(path, error) from None
        raise error(f"{path} is not valid YAML{where}: {' '.join(str(problem).split())}") from None
    except RecursionError:  # the pure-Python loader's limit on the same
        raise _too_deep(path, error) from None


def _too_deep(path: str, error: type[Exception]) -> Exception:
    return error(f"{path} is nested too deeply to be an inductor-tune YAML file")


def _need(mapping: Any, key: str, where: str, types) -> Any:
    if not isinstance(mapping, dict) or key not in mapping:
        raise HeuristicsError(f"{where}: missing `{key}`")
    value = mapping[key]
    types = types if isinstance(types, tuple) else (types,)
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise HeuristicsError(f"{where}: `{key}` must be {' or '.join(t.__name__ for t in types)}, not {value!r}")
    return value


def _element_size(mapping: Any, where: str) -> int:
    element_size = _need(mapping, "element_size", where, int)
    if element_size not in (1, 2, 4, 8):
        raise HeuristicsError(f"{where}: element_size {element_size} is not 1, 2, 4 or 8")
    return element_size


def _pow2_range(value: Any, where: str) -> tuple[int, int]:
    ok = isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    if not ok or not all(v > 0 and v & (v - 1) == 0 for v in value) or value[0] > value[1]:
        raise HeuristicsError(f"{where}: must be [low, high] powers of two with low <= high, not {value!r}")
    return value[0], value[1]


_CONFIG_KEYS = set(LAUNCH_FIELDS)


def _parse_config(data: Any, kind: str, rnumel: tuple[int, int], where: str) -> SlotConfig:
    if not isinstance(data, dict) or set(data) - _CONFIG_KEYS:
        raise HeuristicsError(f"{where}: config must be a mapping with keys from {sorted(_CONFIG_KEYS)}")
    try:
        cfg = SlotConfig(**data)
    except TypeError as exc:
        raise HeuristicsError(f"{where}: {exc}") from None
    for field in POW2_FIELDS:
        v = getattr(cfg, field)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v <= 0 or v & (v - 1)):
            raise HeuristicsError(f"{where}: {field}={v!r} is not a positive power of two")
    for field in STAGE_FIELDS:
        v = getattr(cfg, field)
        # Written into the patch's rule table as they are: a text or a negative count is no launch config.
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 16):
            raise HeuristicsError(f"{where}: {field}={v!r} is not a whole number of stages from 1 to 16")
    if not isinstance(cfg.persistent, bool) or cfg.num_warps > 32:
        raise HeuristicsError(f"{where}: persistent must be true/false and num_warps at most 32")
    # Check the config against the largest kernel the range admits (the tile limits grow with rnumel).
    probe = KernelSlot("rule", kind == "mix_order", 1 << 30, rnumel[1], kind == "mix_order", False)
    reasons = slot_violations(probe, cfg)
    if kind != "mix_order" and (cfg.RSPLIT_SIZE is not None or cfg.NUM_STAGES is not None):
        reasons.append("RSPLIT_SIZE/NUM_STAGES only apply to mix_order rules")
    if reasons:
        raise HeuristicsError(f"{where}: illegal config: {'; '.join(reasons)}")
    return cfg


def parse(doc: Any, source: str = "heuristics") -> Heuristics:
    if not isinstance(doc, dict):
        raise HeuristicsError(f"{source}: not a heuristic file (expected a YAML mapping)")
    if doc.get("format") != FORMAT:
        raise HeuristicsError(f"{source}: format is {doc.get('format')!r}, expected {FORMAT!r}")
    g = _need(doc, "gpu", source, dict)
    gpu = GpuSpec(
        name=_plain_text(_need(g, "name", f"{source}: gpu", str), f"{source}: gpu: name"),
        fingerprint=_plain_text(_need(g, "fingerprint", f"{source}: gpu", str), f"{source}: gpu: fingerprint"),
        compute_capability=str(_need(g, "compute_capability", f"{source}: gpu", (str, float))),
        sm_count=_need(g, "sm_count", f"{source}: gpu", int),
        torch=_plain_text(_need(g, "torch", f"{source}: gpu", str), f"{source}: gpu: torch"),
        triton=_plain_text(_need(g, "triton", f"{source}: gpu", str), f"{source}: gpu: triton"),
    )
    problem = gpu_problem(gpu)
    if problem:
        raise HeuristicsError(f"{source}: gpu: {problem}")
    provenance, holdout = doc.get("provenance") or {}, doc.get("holdout") or {}
    if not isinstance(provenance, dict) or not isinstance(holdout, dict):
        raise HeuristicsError(f"{source}: `provenance` and `holdout` must be mappings")
    databases = provenance.get("databases", [])
    if not isinstance(databases, list) or not all(isinstance(d, str) for d in databases):
        raise HeuristicsError(f"{source}: provenance: `databases` must be a list of database paths or URLs")
    for d in databases:
        _plain_text(d, f"{source}: provenance: databases")
    not_covered = doc.get("not_covered") or []
    if not isinstance(not_covered, list):
        raise HeuristicsError(f"{source}: `not_covered` must be a list")
    rules = []
    for i, r in enumerate(_need(doc, "rules", source, list)):
        where = f"{source}: rules[{i}]"
        kind = _need(r, "kind", where, str)
        if kind not in KINDS:
            raise HeuristicsError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
        element_size = _element_size(r, where)
        reductions = r.get("reductions")
        if reductions is not None and not _is_signature(reductions):
            raise HeuristicsError(f"{where}: reductions {reductions!r} is not like 'sum' or 'sum+sum@backward' "
                                  "(reduction types sorted and '+'-joined, '@backward' for a backward graph)")
        envelopes = r.get("envelopes") or []
        if not isinstance(envelopes, list) or not all(_is_envelope(e) for e in envelopes):
            raise HeuristicsError(f"{where}: envelopes must be a list of texts like "
                                  f"'{torch_rules.envelope_text(dict.fromkeys(torch_rules.ENVELOPE_FIELDS, 1))}'")
        rnumel = _pow2_range(_need(r, "rnumel", where, list), f"{where}: rnumel")
        xnumel = _pow2_range(_need(r, "xnumel", where, list), f"{where}: xnumel")
        action = _need(r, "action", where, str)
        if action not in ("config", "keep_default"):
            raise HeuristicsError(f"{where}: action {action!r} is neither 'config' nor 'keep_default'")
        if (action == "config") != ("config" in r):
            raise HeuristicsError(f"{where}: action {action!r} needs `config` exactly when it is 'config'")
        cfg = _parse_config(r["config"], kind, rnumel, where) if action == "config" else None
        evidence = _parse_evidence(r.get("evidence") or {}, where)
        spans = [_span(r.get(key), f"{where}: {key}") for key in ("rows", "cols")]
        aligned = _aligned_spans(r.get("cols_by_alignment"), spans[1], f"{where}: cols_by_alignment")
        hull = _odd_hull(r.get("odd_hull"), spans, f"{where}: odd_hull")
        rule = RuleSpec(kind, element_size, rnumel, xnumel, cfg, evidence, reductions, tuple(envelopes), *spans,
                        aligned, hull)
        for j, other in enumerate(rules):
            same_kernels = (other.reductions is None or reductions is None or other.reductions == reductions) and (
                not other.envelopes or not envelopes or set(other.envelopes) & set(envelopes))
            # Rules of one size group cut in N (``rowbands.col_cuts``) share their pow2 ranges and part by their
            # measured N spans; a rule without spans covers every size of its ranges.
            if (other.kind, other.element_size) == (kind, element_size) and same_kernels \
                    and _overlap(other.rnumel, rnumel) and _overlap(other.xnumel, xnumel) \
                    and _spans_overlap(other.rows, rule.rows) and _spans_overlap(other.cols, rule.cols):
                raise HeuristicsError(f"{where}: overlaps rules[{j}] ({other.describe()})")
        rules.append(rule)
    unsplit = _parse_unsplit(doc.get("unsplit") or [], gpu, source)
    mix_autotune = _parse_mix_autotune(doc.get("mix_autotune") or [], source)
    multi_kernel = _parse_multi_kernel(doc.get("multi_kernel") or [], source)
    return Heuristics(gpu, tuple(rules), provenance=provenance, holdout=holdout, not_covered=tuple(not_covered),
                      unsplit=unsplit, mix_autotune=mix_autotune, multi_kernel=multi_kernel)


# Inductor splits an inner reduction only when it has fewer than 2 x SMs outputs and is longer than this
# (InductorChoices.reduction_split_factor, torch 2.11-2.14 below compute capability 10).
INNER_SPLIT_MIN_RNUMEL = 8193
# It splits a column reduction only over more rows than a warp's width, and with fewer outputs than 64 x SMs
# (the outer branch of reduction_split_factor and Reduction.num_splits, the same in torch 2.11-2.14).
OUTER_SPLIT_MIN_ROWS = 33


def _parse_unsplit(entries: Any, gpu: GpuSpec, source: str) -> tuple[UnsplitSpec, ...]:
    if not isinstance(entries, list):
        raise HeuristicsError(f"{source}: `unsplit` must be a list")
    out: list[UnsplitSpec] = []
    for i, entry in enumerate(entries):
        where = f"{source}: unsplit[{i}]"
        if not isinstance(entry, dict) or set(entry) - {"rows", "cols", "evidence", "config", "element_size", "kernels",
                                                         "reduction_types", "reduction"}:
            raise HeuristicsError(f"{where}: must be a mapping of rows, cols, evidence, optional reduction and "
                                  "reduction_types and an optional config with its element_size and kernels")
        rows = _span(_need(entry, "rows", where, list), f"{where}: rows")
        cols = _span(_need(entry, "cols", where, list), f"{where}: cols")
        if entry.get("reduction", "inner") not in ("inner", "outer"):
            raise HeuristicsError(f"{where}: reduction must be 'inner' or 'outer', not {entry['reduction']!r}")
        outer = entry.get("reduction") == "outer"
        if outer:
            if rows[0] < OUTER_SPLIT_MIN_ROWS or cols[1] >= 64 * gpu.sm_count:
                raise HeuristicsError(f"{where}: covers column reductions Inductor does not split (rows must start "
                                      f"at {OUTER_SPLIT_MIN_ROWS} or more and cols stay below {64 * gpu.sm_count}, "
                                      "64 x SMs)")
            if "config" in entry:  # the A/B timed the one kernel as Inductor launches it, and nothing else
                raise HeuristicsError(f"{where}: an outer unsplit rule takes Inductor's config, not one of its own")
        elif rows[1] >= 2 * gpu.sm_count or cols[0] < INNER_SPLIT_MIN_RNUMEL:
            raise HeuristicsError(f"{where}: covers reductions Inductor does not split (rows must stay below "
                                  f"{2 * gpu.sm_count}, 2 x SMs, and cols start at {INNER_SPLIT_MIN_RNUMEL} or more)")
        for j, other in enumerate(out):
            if other.outer == outer and _overlap(other.rows, rows) and _overlap(other.cols, cols):
                raise HeuristicsError(f"{where}: overlaps unsplit[{j}]")
        cfg, element_size, kernels = None, None, ()
        if ("config" in entry) != ("element_size" in entry) or ("kernels" in entry and "config" not in entry):
            raise HeuristicsError(f"{where}: a config needs its element_size, and an element_size or kernels a config")
        if "config" in entry:
            element_size = _element_size(entry, where)
            pow2 = (torch_rules.next_pow2(cols[0]), torch_rules.next_pow2(cols[1]))
            cfg = _parse_config(entry["config"], "inner_looped", pow2, where)
            kernels = _unsplit_kernels(entry["kernels"], where) if "kernels" in entry else ()
        types = entry.get("reduction_types", [])
        named = isinstance(types, list) and all(isinstance(t, str) and _REDUCTION_TYPE.fullmatch(t) for t in types)
        if "reduction_types" in entry and not (named and types):
            raise HeuristicsError(f"{where}: reduction_types must be a non-empty list of reduction type names")
        out.append(UnsplitSpec(rows, cols, _parse_evidence(entry.get("evidence") or {}, where), cfg, element_size,
                               kernels, tuple(types), outer))
    return tuple(out)


def _parse_mix_autotune(entries: Any, source: str) -> tuple[MixAutotuneSpec, ...]:
    if not isinstance(entries, list):
        raise HeuristicsError(f"{source}: `mix_autotune` must be a list")
    out: list[MixAutotuneSpec] = []
    for i, entry in enumerate(entries):
        where = f"{source}: mix_autotune[{i}]"
        if not isinstance(entry, dict) or set(entry) - {"rows", "cols", "element_size", "multi_stages", "min_split",
                                                         "margin", "up_only", "end_to_end", "sweep", "kernels",
                                                         "evidence"}:
            raise HeuristicsError(f"{where}: must be a mapping of rows, cols, element_size, evidence and optional "
                                  "multi_stages, min_split, margin, up_only, end_to_end, sweep and kernels")
        rows = _span(_need(entry, "rows", where, list), f"{where}: rows")
        cols = _span(_need(entry, "cols", where, list), f"{where}: cols")
        element_size = _element_size(entry, where)
        flags = {name: entry.get(name, False) for name in ("multi_stages", "up_only", "end_to_end", "sweep")}
        if not all(isinstance(value, bool) for value in flags.values()):
            raise HeuristicsError(f"{where}: multi_stages, up_only, end_to_end and sweep must be true or false")
        min_split = entry.get("min_split")
        if min_split is not None and (type(min_split) is not int or not 1 <= min_split <= 4096
                                      or min_split & (min_split - 1)):
            raise HeuristicsError(f"{where}: min_split must be a power of two from 1 to 4096, not {min_split!r}")
        margin = entry.get("margin")
        if margin is not None and (isinstance(margin, bool) or not isinstance(margin, (int, float))
                                   or not 0 <= margin <= 1):
            raise HeuristicsError(f"{where}: margin must be a fraction from 0 to 1, not {margin!r}")
        kernels = _unsplit_kernels(entry["kernels"], where) if "kernels" in entry else ()
        for j, other in enumerate(out):
            if other.element_size == element_size and _overlap(other.rows, rows) and _overlap(other.cols, cols) \
                    and (not other.kernels or not kernels or set(other.kernels) & set(kernels)):
                raise HeuristicsError(f"{where}: overlaps mix_autotune[{j}]")
        out.append(MixAutotuneSpec(rows, cols, element_size, flags["multi_stages"], min_split, margin,
                                   flags["up_only"], kernels, _parse_evidence(entry.get("evidence") or {}, where),
                                   flags["end_to_end"], flags["sweep"]))
    return tuple(out)


# Each config is one more kernel Inductor compiles and times at the kernel's first run.
MAX_MULTI_KERNEL_CONFIGS = 8


def _parse_multi_kernel(entries: Any, source: str) -> tuple[MultiKernelSpec, ...]:
    if not isinstance(entries, list):
        raise HeuristicsError(f"{source}: `multi_kernel` must be a list")
    out: list[MultiKernelSpec] = []
    for i, entry in enumerate(entries):
        where = f"{source}: multi_kernel[{i}]"
        if not isinstance(entry, dict) or set(entry) - {"kind", "rows", "cols", "element_size", "configs", "kernels",
                                                         "evidence"}:
            raise HeuristicsError(f"{where}: must be a mapping of kind, rows, cols, element_size, configs, evidence "
                                  "and optional kernels")
        kind = _need(entry, "kind", where, str)
        if kind not in ("inner_persistent", "inner_looped"):
            raise HeuristicsError(f"{where}: kind {kind!r} is neither 'inner_persistent' nor 'inner_looped'")
        rows = _span(_need(entry, "rows", where, list), f"{where}: rows")
        cols = _span(_need(entry, "cols", where, list), f"{where}: cols")
        element_size = _element_size(entry, where)
        configs = _need(entry, "configs", where, list)
        if not 1 <= len(configs) <= MAX_MULTI_KERNEL_CONFIGS:
            raise HeuristicsError(f"{where}: configs must hold 1 to {MAX_MULTI_KERNEL_CONFIGS} configs")
        pow2 = (torch_rules.next_pow2(cols[0]), torch_rules.next_pow2(cols[1]))
        parsed = tuple(_parse_config(c, kind, pow2, f"{where}: configs[{j}]") for j, c in enumerate(configs))
        if len(set(parsed)) != len(parsed):
            raise HeuristicsError(f"{where}: configs repeat")
        kernels = _unsplit_kernels(entry["kernels"], where) if "kernels" in entry else ()
        for j, other in enumerate(out):
            if (other.kind, other.element_size) == (kind, element_size) and _overlap(other.rows, rows) \
                    and _overlap(other.cols, cols) and (not other.kernels or not kernels
                                                        or set(other.kernels) & set(kernels)):
                raise HeuristicsError(f"{where}: overlaps multi_kernel[{j}]")
        out.append(MultiKernelSpec(kind, element_size, rows, cols, parsed, kernels,
                                   _parse_evidence(entry.get("evidence") or {}, where)))
    return tuple(out)


def _unsplit_kernels(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    """An unsplit config's kernels: a non-empty list of {reductions, envelope}, each as a launch rule names them."""
    if not isinstance(value, list) or not value or not all(
            isinstance(k, dict) and set(k) == {"reductions", "envelope"} and _is_signature(k["reductions"])
            and _is_envelope(k["envelope"]) for k in value):
        raise HeuristicsError(f"{where}: kernels must be a non-empty list of {{reductions, envelope}} mappings, "
                              "as launch rules spell them")
    return tuple((k["reductions"], k["envelope"]) for k in value)


# What a text from a heuristic file may hold where it reaches generated code (``inductor-tune patch``
# writes the GPU's name and fingerprint into a Python module and a diff): printable ASCII without
# quotes, backslashes or line breaks, so that no value can end a string, a comment or a docstring.
_UNSAFE = set("\"'\\`")


def text_problem(value: Any) -> str | None:
    """Why ``value`` may not stand in generated code, or None."""
    if not isinstance(value, str) or not value:
        return "must be a non-empty text"
    if len(value) > 300:
        return "is longer than 300 characters"
    if not (value.isascii() and value.isprintable()) or _UNSAFE & set(value):
        return "may hold only printable ASCII without quotes or backslashes (no line breaks)"
    return None


def _plain_text(value: str, where: str) -> str:
    problem = text_problem(value)
    if problem:
        raise HeuristicsError(f"{where} {problem}")
    return value


_CAPABILITY = re.compile(r"[1-9][0-9]?\.[0-9]")


def gpu_problem(gpu: GpuSpec) -> str | None:
    """Why a GPU description cannot be used (in a rule table, a patch), or None; also checks a
    ``GpuSpec`` built in code, which never went through ``parse``."""
    for field in ("name", "fingerprint", "torch", "triton"):
        problem = text_problem(getattr(gpu, field))
        if problem:
            return f"{field} {problem}"
    if not isinstance(gpu.compute_capability, str) or not _CAPABILITY.fullmatch(gpu.compute_capability):
        return f"compute_capability {gpu.compute_capability!r} is not like '9.0'"
    if not isinstance(gpu.sm_count, int) or isinstance(gpu.sm_count, bool) or not 0 < gpu.sm_count <= 100_000:
        return f"sm_count {gpu.sm_count!r} is not a positive number of SMs"
    return None


_EVIDENCE_NUMBERS = ("gain_geomean", "gain_min", "gain_max", "noise", "worst_regret")
_EVIDENCE_LISTS = ("shapes", "measured", "unmeasured", "inductor_default", "candidates")


def _parse_evidence(ev: Any, where: str) -> Evidence:
    """Evidence is data the patch formats into comments: numbers must be numbers, lists lists of text."""
    if not isinstance(ev, dict):
        raise HeuristicsError(f"{where}: evidence must be a mapping")
    out: dict[str, Any] = {}
    for key in _EVIDENCE_NUMBERS:
        value = ev.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise HeuristicsError(f"{where}: evidence: `{key}` must be a number, not {value!r}")
        out[key] = value
    for key in _EVIDENCE_LISTS:
        value = ev.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise HeuristicsError(f"{where}: evidence: `{key}` must be a list of texts")
        out[key] = tuple(value)
    note = ev.get("note", "")
    if not isinstance(note, str):
        raise HeuristicsError(f"{where}: evidence: `note` must be a text")
    return Evidence(note=note, **out)


_REDUCTION_TYPE = re.compile(r"[a-z][a-z0-9_]*")


def _is_signature(text: Any) -> bool:
    """Reduction type names as Inductor spells them (``welford_reduce``), sorted, '+'-joined; nothing else
    may reach the generated torch module (``inductor-tune patch``)."""
    if not isinstance(text, str) or not text:
        return False
    types = text[: -len(torch_rules.BACKWARD_MARK)] if text.endswith(torch_rules.BACKWARD_MARK) else text
    parts = types.split("+")
    return all(_REDUCTION_TYPE.fullmatch(t) for t in parts) and types == torch_rules.reductions_key(parts)


_OPS = re.compile(r"[a-z][a-z0-9_]*:[0-9]+(\+[a-z][a-z0-9_]*:[0-9]+)*")


def _is_envelope(text: Any) -> bool:
    if not isinstance(text, str):
        return False
    fields = [item.partition("=") for item in text.split(",")]
    ops = fields.pop() if fields and fields[-1][0] == torch_rules.OPS_FIELD else None
    if ops is not None and not (_OPS.fullmatch(ops[2]) and ops[2].isascii()):
        return False
    return [name for name, _, _ in fields] == list(torch_rules.ENVELOPE_FIELDS) and all(
        value.isascii() and value.isdigit() for _, _, value in fields)


def _span(value: Any, where: str) -> tuple[int, int] | None:
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 2 and all(type(v) is int and v > 0 for v in value)
            and value[0] <= value[1]):
        raise HeuristicsError(f"{where} must be [low, high]: positive integers, low <= high (the measured span)")
    return value[0], value[1]


def _aligned_spans(value: Any, cols: tuple[int, int] | None, where: str) -> tuple[tuple[int, int, int, int], ...]:
    """A rule's spans of N per alignment class: [{mod: 16, rem: 0, cols: [low, high]}, ...], inside ``cols``, at
    most one per class (a power-of-two modulus up to 16)."""
    if value is None:
        return ()
    usage = (f"{where} must be a list of {{mod, rem, cols}}: mod 2, 4, 8 or 16, 0 <= rem < mod, cols [low, high] "
             "inside the rule's cols, every N of low..high in the class, one entry per class")
    if not isinstance(value, list) or not value or cols is None:
        raise HeuristicsError(usage)
    out = []
    for entry in value:
        if not isinstance(entry, dict) or set(entry) != {"mod", "rem", "cols"}:
            raise HeuristicsError(usage)
        m, r, span = entry["mod"], entry["rem"], entry["cols"]
        if type(m) is not int or m not in (2, 4, 8, 16) or type(r) is not int or not 0 <= r < m:
            raise HeuristicsError(usage)
        lo, hi = _span(span, where)
        if not (cols[0] <= lo and hi <= cols[1] and lo % m == r and hi % m == r):
            raise HeuristicsError(usage)
        if any(r % m2 == r2 if m2 <= m else r2 % m == r for m2, r2, _, _ in out):  # two classes share an N
            raise HeuristicsError(usage)
        out.append((m, r, lo, hi))
    return tuple(out)


def _odd_hull(value: Any, spans: list, where: str) -> tuple[tuple[int, int], ...]:
    """A rule's hull of its evidence at odd N: [[rows, N], ...], distinct vertices inside the rule's rows and cols,
    N odd, and from three on a strictly convex polygon, counter-clockwise in (log2 rows, N)."""
    if value is None:
        return ()
    usage = (f"{where} must be a list of [rows, N] (positive integers, N odd, inside the rule's rows and cols): the "
             "vertices of a convex hull, counter-clockwise in (log2 rows, N)")
    if not isinstance(value, list) or not 1 <= len(value) <= 256 or None in spans:
        raise HeuristicsError(usage)
    for vertex in value:
        if not (isinstance(vertex, list) and len(vertex) == 2 and all(type(v) is int and v > 0 for v in vertex)
                and vertex[1] % 2 == 1 and all(lo <= v <= hi for v, (lo, hi) in zip(vertex, spans))):
            raise HeuristicsError(usage)
    hull, n = tuple((rows, cols) for rows, cols in value), len(value)
    turns = [torch_rules.hull_turn(hull[i], hull[(i + 1) % n], hull[(i + 2) % n]) for i in range(n)] if n >= 3 else []
    if len(set(hull)) != n or any(turn <= 0 for turn in turns):
        raise HeuristicsError(usage)
    return hull


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _spans_overlap(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    return a is None or b is None or _overlap(a, b)


def load(path: str) -> Heuristics:
    if os.path.isdir(path):
        raise HeuristicsError(f"heuristic file {path} is a directory; name a YAML file written by `distill`")
    if not os.path.exists(path):
        raise HeuristicsError(f"cannot read heuristic file {path}: no such file")
    return parse(read_yaml(path, HeuristicsError), path)
