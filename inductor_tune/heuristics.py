"""Distilled heuristic files: format, validation, rule lookup, and installing them into Inductor.

A heuristic file (YAML, written by ``inductor-tune distill``) holds the rules for one GPU model:
per kernel kind, element size and next_pow2(rnumel)/next_pow2(xnumel) range either a launch config
or "keep default", each with its evidence, plus the provenance of the studies and the held-out
results.  ``install`` applies the config rules to every later ``torch.compile`` through
``config.inductor_choices_class``, only on the GPU model the file was made for.  The lookup runs in
``torch_rules`` so that a patched torch (``inductor-tune patch``) covers exactly the same kernels.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import logging
import os
import re
import tempfile
from typing import Any, Mapping, Sequence

import yaml

from . import fallback, torch_rules
from .problem import ELEMENT_SIZES
from .space import DEFAULT_FLAGS, INDUCTOR_DEFAULT, KernelSlot, SlotConfig, TrialConfig, slot_violations

log = logging.getLogger(__name__)

FORMAT = "inductor-tune-heuristics/1"
KINDS = ("inner_persistent", "inner_looped", "outer", "mix_order")
ENV_VAR = "INDUCTOR_TUNE_HEURISTICS"


class HeuristicsError(ValueError):
    """A heuristic file that cannot be used; the message is the one line the user sees."""


@dataclasses.dataclass(frozen=True)
class GpuSpec:
    name: str
    fingerprint: str
    compute_capability: str  # "9.0"
    sm_count: int
    torch: str
    triton: str

    @property
    def cc(self) -> int:
        major, minor = self.compute_capability.split(".")
        return int(major) * 10 + int(minor)


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What the rule rests on, measured on the fitting shapes of its range (in-sample)."""

    shapes: tuple[str, ...] = ()
    measured: tuple[str, ...] = ()  # shapes where the rule's config was measured
    unmeasured: tuple[str, ...] = ()  # shapes where it never was (to re-measure on the GPU)
    gain_geomean: float | None = None  # speedup over Inductor's default, where measured
    gain_min: float | None = None
    gain_max: float | None = None
    noise: float | None = None  # largest measurement noise at those shapes (fraction)
    worst_regret: float | None = None  # worst ratio of the shape's best time to the rule's time
    inductor_default: tuple[str, ...] = ()  # what Inductor picks there today
    candidates: tuple[str, ...] = ()  # promising configs measured at too few shapes: re-measure these
    note: str = ""


@dataclasses.dataclass(frozen=True)
class RuleSpec:
    kind: str
    element_size: int
    rnumel: tuple[int, int]
    xnumel: tuple[int, int]
    config: SlotConfig | None  # None: keep Inductor's default
    evidence: Evidence = Evidence()
    reductions: str | None = None  # torch_rules.reductions_key of the kernels it covers; None: any
    # torch_rules.envelope_text of every kernel the evidence measured; the rule covers those alone
    # (empty: any, as in files written before envelopes were recorded).
    envelopes: tuple[str, ...] = ()
    # Inclusive spans of the actual rows and reduction lengths the evidence measured; None: the pow2
    # ranges alone (files written before spans were recorded).  See torch_rules.Rule.
    rows: tuple[int, int] | None = None
    cols: tuple[int, int] | None = None

    def matches(self, kind: str, element_size: int | None, rnumel_pow2: int, xnumel_pow2: int,
                reductions: str | None = None, envelope: str | None = None, rows: int | None = None,
                cols: int | None = None) -> bool:
        return (
            self.kind == kind and self.element_size == element_size
            and self.rnumel[0] <= rnumel_pow2 <= self.rnumel[1] and self.xnumel[0] <= xnumel_pow2 <= self.xnumel[1]
            and (self.reductions is None or self.reductions == reductions)
            and (not self.envelopes or envelope in self.envelopes)
            # Sizes not given (a fit's pow2 bookkeeping): the buckets alone.  Lookups of real kernels
            # (``lookup``, torch_rules) always pass them.
            and (rows is None or torch_rules.within(self.rows, rows))
            and (cols is None or torch_rules.within(self.cols, cols))
        )

    def describe(self) -> str:
        what = self.config.describe() if self.config else "keep default"
        fused = f" reductions={self.reductions}" if self.reductions else ""
        return f"{self.kind}{fused} elem={self.element_size}B r={self.rnumel[0]}..{self.rnumel[1]} " \
               f"x={self.xnumel[0]}..{self.xnumel[1]}: {what}"


@dataclasses.dataclass(frozen=True)
class Heuristics:
    gpu: GpuSpec
    rules: tuple[RuleSpec, ...]
    provenance: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    holdout: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    not_covered: tuple[str, ...] = ()

    def lookup(self, kind: str, element_size: int | None, rnumel: int, xnumel: int,
               reductions: str | None = None, envelope: str | None = None) -> RuleSpec | None:
        """The rule covering a kernel (sizes are rounded up to powers of two, as Inductor's hints are)."""
        r, x = torch_rules.next_pow2(rnumel), torch_rules.next_pow2(xnumel)
        return next((rule for rule in self.rules
                     if rule.matches(kind, element_size, r, x, reductions, envelope, xnumel, rnumel)), None)

    def table(self) -> torch_rules.Table:
        """The config rules as torch_rules consults them (keep-default rules need no entry)."""
        rules = tuple(
            torch_rules.Rule(
                kind=r.kind, element_size=r.element_size, rnumel=tuple(r.rnumel), xnumel=tuple(r.xnumel),
                persistent=r.config.persistent, XBLOCK=r.config.XBLOCK, num_warps=r.config.num_warps,
                R0_BLOCK=None if r.config.persistent else r.config.R0_BLOCK,
                num_stages=1 if r.config.persistent else r.config.num_stages,
                RSPLIT_SIZE=r.config.RSPLIT_SIZE, NUM_STAGES=r.config.NUM_STAGES, reductions=r.reductions,
                envelopes=tuple(r.envelopes), rows=tuple(r.rows) if r.rows else None,
                cols=tuple(r.cols) if r.cols else None,
            )
            for r in self.rules if r.config is not None
        )
        return torch_rules.Table(self.gpu.name, self.gpu.cc, self.gpu.sm_count, rules)

    def digest(self) -> str:
        body = json.dumps([dataclasses.asdict(self.gpu), [_rule_dict(r) for r in self.rules]], sort_keys=True)
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    # -- what validate needs: the TrialConfig these rules force for one problem ----------------

    def rule_for_slot(self, slot: KernelSlot, dtype: str, hint: str | None = None) -> RuleSpec | None:
        """The rule for a probed kernel slot; non-mix slots need their reduction hint (e.g. "INNER")."""
        if not slot.mix_order and hint is None:
            return None
        kind = torch_rules.kernel_kind(hint or "", torch_rules.next_pow2(slot.rnumel), slot.mix_order)
        signature = torch_rules.kernel_signature(slot.reductions.split("+"), slot.backward) if slot.reductions else None
        return self.lookup(kind, ELEMENT_SIZES.get(dtype), slot.rnumel, slot.xnumel, signature, slot.envelope or None)

    def trial_config(self, slots: Sequence[KernelSlot], dtype: str, hints: Mapping[str, str] | None = None) -> TrialConfig:
        """What a compile under ``install`` forces: the config rules' slots, default elsewhere."""
        forced = []
        for slot in slots:
            rule = self.rule_for_slot(slot, dtype, (hints or {}).get(slot.key))
            if rule is not None and rule.config is not None and not slot_violations(slot, rule.config):
                forced.append((slot.key, rule.config))
        return TrialConfig(DEFAULT_FLAGS, tuple(sorted(forced))) if forced else INDUCTOR_DEFAULT


def slot_hints(slots: Sequence[KernelSlot], inductor_choice_json: str | None) -> dict[str, str]:
    """Reduction hint per slot from a default trial's ``inductor_choice_json`` (matched on size hints).

    A slot whose size hints match kernels with different hints gets none (it stays on the default).
    """
    if not inductor_choice_json:
        return {}
    kernels = json.loads(inductor_choice_json)
    out = {}
    for slot in slots:
        wanted = {"x": torch_rules.next_pow2(slot.xnumel), "r0_": torch_rules.next_pow2(slot.rnumel)}
        found = {
            str(k.get("reduction_hint", "")).split(".")[-1] for k in kernels
            if k.get("size_hints") == wanted and bool((k.get("config") or {}).get("RSPLIT_SIZE")) == slot.mix_order
        }
        if len(found) == 1:
            out[slot.key] = found.pop()
    return out


# -- file format --------------------------------------------------------------------------------


def _config_dict(cfg: SlotConfig) -> dict[str, Any]:
    out: dict[str, Any] = {"persistent": cfg.persistent, "XBLOCK": cfg.XBLOCK, "num_warps": cfg.num_warps}
    if not cfg.persistent:
        out.update(R0_BLOCK=cfg.R0_BLOCK, num_stages=cfg.num_stages)
    if cfg.RSPLIT_SIZE is not None:
        out.update(RSPLIT_SIZE=cfg.RSPLIT_SIZE, NUM_STAGES=cfg.NUM_STAGES)
    return out


def _rule_dict(rule: RuleSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": rule.kind}
    if rule.reductions is not None:
        out["reductions"] = rule.reductions
    out.update({
        "element_size": rule.element_size, "rnumel": list(rule.rnumel), "xnumel": list(rule.xnumel),
    })
    if rule.envelopes:
        out["envelopes"] = list(rule.envelopes)
    if rule.rows:
        out["rows"] = list(rule.rows)
    if rule.cols:
        out["cols"] = list(rule.cols)
    out["action"] = "config" if rule.config else "keep_default"
    if rule.config:
        out["config"] = _config_dict(rule.config)
    ev = {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(rule.evidence).items()}
    out["evidence"] = {k: v for k, v in ev.items() if v not in (None, "", [])}
    return out


class _Flow(dict):
    """A mapping written on one line (configs, hold-out rows): the file stays readable at a glance."""


class _FlowList(list):
    pass


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(
    _FlowList, lambda dumper, data: dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)
)


_Dumper.add_representer(
    _Flow, lambda dumper, data: dumper.represent_mapping("tag:yaml.org,2002:map", list(data.items()), flow_style=True)
)


def _flow_rows(holdout: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in holdout.items():
        if isinstance(value, dict) and isinstance(value.get("shapes"), list):
            value = dict(value, shapes=[_Flow(row) for row in value["shapes"]])
        out[key] = value
    return out


def to_yaml(heur: Heuristics) -> str:
    rules = []
    for rule in heur.rules:
        entry = _rule_dict(rule)
        entry["rnumel"], entry["xnumel"] = _FlowList(entry["rnumel"]), _FlowList(entry["xnumel"])
        if "config" in entry:
            entry["config"] = _Flow(entry["config"])
        rules.append(entry)
    doc = {
        "format": FORMAT,
        "gpu": dataclasses.asdict(heur.gpu),
        "rules": rules,
        "not_covered": list(heur.not_covered),
        "provenance": dict(heur.provenance),
        "holdout": _flow_rows(heur.holdout),
    }
    header = (
        f"# Distilled reduction-kernel heuristics for {heur.gpu.name} ({heur.gpu.fingerprint}).\n"
        "# Written by `inductor-tune distill`; every number comes from the studies named under provenance.\n"
        "# Rules key on next_pow2(rnumel) / next_pow2(xnumel) ranges (inclusive), the kernel kind and the\n"
        "# smallest element size; `keep_default` means the evidence did not beat Inductor beyond noise.\n"
    )
    return header + yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=200, default_flow_style=False)


def dump(heur: Heuristics, path: str) -> None:
    """Write atomically: an existing file is replaced only by a complete new one."""
    text = to_yaml(heur)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".heuristics-", suffix=".yaml", dir=folder)
    os.fchmod(fd, 0o644)  # mkstemp makes it private; a heuristic file is meant to be shared
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _need(mapping: Any, key: str, where: str, types) -> Any:
    if not isinstance(mapping, dict) or key not in mapping:
        raise HeuristicsError(f"{where}: missing `{key}`")
    value = mapping[key]
    types = types if isinstance(types, tuple) else (types,)
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise HeuristicsError(f"{where}: `{key}` must be {' or '.join(t.__name__ for t in types)}, not {value!r}")
    return value


def _pow2_range(value: Any, where: str) -> tuple[int, int]:
    ok = isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    if not ok or not all(v > 0 and v & (v - 1) == 0 for v in value) or value[0] > value[1]:
        raise HeuristicsError(f"{where}: must be [low, high] powers of two with low <= high, not {value!r}")
    return value[0], value[1]


_CONFIG_KEYS = {"persistent", "XBLOCK", "num_warps", "R0_BLOCK", "num_stages", "RSPLIT_SIZE", "NUM_STAGES"}


def _parse_config(data: Any, kind: str, rnumel: tuple[int, int], where: str) -> SlotConfig:
    if not isinstance(data, dict) or set(data) - _CONFIG_KEYS:
        raise HeuristicsError(f"{where}: config must be a mapping with keys from {sorted(_CONFIG_KEYS)}")
    try:
        cfg = SlotConfig(**data)
    except TypeError as exc:
        raise HeuristicsError(f"{where}: {exc}") from None
    for field in ("XBLOCK", "num_warps", "R0_BLOCK", "RSPLIT_SIZE"):
        v = getattr(cfg, field)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v <= 0 or v & (v - 1)):
            raise HeuristicsError(f"{where}: {field}={v!r} is not a positive power of two")
    for field in ("num_stages", "NUM_STAGES"):
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
        element_size = _need(r, "element_size", where, int)
        if element_size not in (1, 2, 4, 8):
            raise HeuristicsError(f"{where}: element_size {element_size} is not 1, 2, 4 or 8")
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
        rule = RuleSpec(kind, element_size, rnumel, xnumel, cfg, evidence, reductions, tuple(envelopes), *spans)
        for j, other in enumerate(rules):
            same_kernels = (other.reductions is None or reductions is None or other.reductions == reductions) and (
                not other.envelopes or not envelopes or set(other.envelopes) & set(envelopes))
            if (other.kind, other.element_size) == (kind, element_size) and same_kernels \
                    and _overlap(other.rnumel, rnumel) and _overlap(other.xnumel, xnumel):
                raise HeuristicsError(f"{where}: overlaps rules[{j}] ({other.describe()})")
        rules.append(rule)
    return Heuristics(gpu, tuple(rules), provenance=provenance, holdout=holdout, not_covered=tuple(not_covered))


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


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def load(path: str) -> Heuristics:
    from .experiment import read_yaml

    if os.path.isdir(path):
        raise HeuristicsError(f"heuristic file {path} is a directory; name a YAML file written by `distill`")
    if not os.path.exists(path):
        raise HeuristicsError(f"cannot read heuristic file {path}: no such file")
    return parse(read_yaml(path, HeuristicsError), path)


# -- installing into Inductor --------------------------------------------------------------------

_INSTALLED: torch_rules.Table | None = None
_INSTALLED_DIGEST: str | None = None
# One line per kernel a rule was forced into in this process (validate tells touched problems by it).
_APPLIED: list[str] = []


def applied_rules() -> list[str]:
    """Every rule application of this process so far, oldest first: 'rule -> kernel sizes'."""
    return list(_APPLIED)


def installed_digest() -> str | None:
    """The digest of the installed rules (TrialChoices.uuid folds it into torch 2.13's FX-cache key)."""
    return _INSTALLED_DIGEST if _INSTALLED is not None else None


def apply_rules(features, groups, kernel_kwargs):
    """The installed rules' config for one kernel, as TritonKernel kwargs (unchanged where none applies).

    Called by ``choices.TrialChoices`` whenever no tuning plan is active: Inductor caches one choices
    object per thread, and backward graphs compile on autograd's own thread, so the rules live in the
    class every thread gets rather than in a subclass only later threads would see.
    """
    if _INSTALLED is None:
        return kernel_kwargs
    mix = bool(kernel_kwargs.get("mix_order_reduction"))
    tiling = groups[0] if groups and isinstance(groups[0], dict) else {}
    if kernel_kwargs.get("fixed_config") is not None or set(tiling) - {"x", "r0_"}:
        return kernel_kwargs
    try:
        rule = torch_rules.rule_for_features(features, mix, _INSTALLED)
        envelope = torch_rules.envelope_of_features(features) if rule is not None else None
    except Exception as exc:  # a lookup failure must never break a user's compile
        log.debug("heuristic lookup failed, keeping Inductor's config: %s", exc)
        return kernel_kwargs
    if rule is None:
        return kernel_kwargs
    if mix:
        import torch._inductor.config as inductor_config

        # The split was fixed before this hook runs; a mismatch would size the workspace wrongly.
        if inductor_config.triton.mix_order_reduction_split_size != rule.RSPLIT_SIZE:
            return kernel_kwargs
    cfg = SlotConfig(
        persistent=rule.persistent, XBLOCK=rule.XBLOCK, num_warps=rule.num_warps, R0_BLOCK=rule.R0_BLOCK,
        num_stages=rule.num_stages, RSPLIT_SIZE=rule.RSPLIT_SIZE, NUM_STAGES=rule.NUM_STAGES,
    )
    log.debug("heuristic rule %s -> %s", rule, cfg.describe())
    from .choices import force_config

    forced = force_config(kernel_kwargs, cfg, mix)
    fallback.record(rule, envelope, forced["fixed_config"])
    _APPLIED.append(f"{torch_rules.describe_rule(rule)} -> x={features.numel} r={features.reduction_numel}")
    return forced


def _mix_split_wrapper(original):
    """Set the split size of one mix-order kernel from the rules (Inductor reads it from config)."""

    @functools.wraps(original)
    def wrapper(self, node1, node2):
        import torch._inductor.config as inductor_config
        from torch._inductor import scheduler

        from . import choices

        table = _INSTALLED
        split = None
        if table is not None and choices._ACTIVE is None and inductor_config.triton.mix_order_reduction_split_size is None:
            try:
                numel, rnumel = scheduler.MixOrderReduction.get_numel_rnumel(node1)
                split = torch_rules.mix_order_split_size(node1, numel, rnumel, table)
            except Exception as exc:
                log.debug("mix-order split lookup failed, keeping Inductor's split: %s", exc)
        if split is None:
            return original(self, node1, node2)
        with inductor_config.patch({"triton.mix_order_reduction_split_size": split}):
            return original(self, node1, node2)

    wrapper.__inductor_tune_original__ = original
    return wrapper


def _wrapped_functions() -> tuple[tuple[Any, str], ...]:
    """What ``install`` wraps: the mix-order split, and the compile and kernel naming the fallback guards."""
    from torch._inductor import compile_fx
    from torch._inductor.codegen.simd import SIMDScheduling
    from torch._inductor.codegen.triton import TritonScheduling

    return ((SIMDScheduling, "_codegen_mix_order_reduction"), (compile_fx, "fx_codegen_and_compile"),
            (TritonScheduling, "define_kernel"))


def device_matches(heur: Heuristics, props: Any) -> bool:
    """``props`` is torch.cuda.get_device_properties(i) (or anything with major/minor/SM count)."""
    cc = getattr(props, "major", -1) * 10 + getattr(props, "minor", 0)
    # The name too: an H100 SXM has an H200's capability and SM count (torch_rules.device_name_matches).
    return (cc == heur.gpu.cc and getattr(props, "multi_processor_count", None) == heur.gpu.sm_count
            and getattr(props, "name", None) == heur.gpu.name)


class Installation:
    """Handle returned by ``install``; a context manager that uninstalls on exit."""

    def __init__(self, heur: Heuristics, active: bool, reason: str):
        self.heuristics, self.active, self.reason = heur, active, reason
        self._previous_class = None
        self._previous_caches = None

    def __enter__(self) -> "Installation":
        return self

    def __exit__(self, *exc) -> None:
        self.uninstall()

    def uninstall(self) -> None:
        global _INSTALLED
        if not self.active:
            return
        import torch._inductor.config as inductor_config

        from .choices import drop_cached_choices

        self.active = False
        _INSTALLED = None
        inductor_config.inductor_choices_class = self._previous_class
        if self._previous_caches is not None:
            import torch._functorch.config as functorch_config

            inductor_config.fx_graph_cache, functorch_config.enable_autograd_cache = self._previous_caches
        for owner, name in _wrapped_functions():
            original = getattr(getattr(owner, name), "__inductor_tune_original__", None)
            if original is not None:
                setattr(owner, name, original)
        drop_cached_choices()
        log.info("inductor_tune heuristics for %s uninstalled", self.heuristics.gpu.name)


def _current_device_props() -> Any | None:
    import torch

    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_properties(torch.cuda.current_device())


def install(heuristics: "str | os.PathLike | Heuristics") -> Installation:
    """Make later torch.compile calls use the file's rules (a no-op, logged, on another GPU)."""
    global _INSTALLED
    heur = heuristics if isinstance(heuristics, Heuristics) else load(os.fspath(heuristics))
    # choices (all of torch) only here: reading and writing heuristic files needs no torch.
    from .choices import TrialChoices, check_torch_supported, drop_cached_choices

    check_torch_supported()
    props = _current_device_props()
    target = f"{heur.gpu.name} (sm{heur.gpu.cc}, {heur.gpu.sm_count} SMs)"
    if props is None:
        reason = f"inductor_tune heuristics for {target} not installed: no CUDA device here"
    elif not device_matches(heur, props):
        reason = (
            f"inductor_tune heuristics for {target} not installed: this device is {props.name} "
            f"(sm{props.major}{props.minor}, {props.multi_processor_count} SMs); Inductor keeps its defaults"
        )
    else:
        reason = ""
    if reason:
        log.warning(reason)
        return Installation(heur, False, reason)
    if _INSTALLED is not None:
        raise HeuristicsError("inductor_tune heuristics are already installed in this process; uninstall first")
    import torch._inductor.config as inductor_config

    handle = Installation(heur, True, "")
    handle._previous_class = inductor_config.inductor_choices_class
    if not hasattr(inductor_config, "_cache_config_factory_keys"):
        import torch._functorch.config as functorch_config

        # Before torch 2.13 the graph caches' keys do not ask the choices factory for its uuid(), so
        # a graph compiled without the rules could be served from cache: compile afresh instead.
        handle._previous_caches = (inductor_config.fx_graph_cache, functorch_config.enable_autograd_cache)
        inductor_config.fx_graph_cache = False
        functorch_config.enable_autograd_cache = False
        log.info("this torch: FX-graph and AOTAutograd caches off while the heuristics are installed")
    global _INSTALLED_DIGEST
    _INSTALLED, _INSTALLED_DIGEST = heur.table(), heur.digest()
    inductor_config.inductor_choices_class = TrialChoices
    wrappers = (_mix_split_wrapper, fallback.guard_compile, fallback.guard_define_kernel)
    for (owner, name), wrap in zip(_wrapped_functions(), wrappers):
        if not hasattr(getattr(owner, name), "__inductor_tune_original__"):
            setattr(owner, name, wrap(getattr(owner, name)))
    drop_cached_choices()
    n = len(_INSTALLED.rules)
    log.info("inductor_tune heuristics for %s installed: %d config rules (%s)", target, n, heur.digest())
    return handle


def install_from_env() -> Installation | None:
    """Install the file named by $INDUCTOR_TUNE_HEURISTICS, if set (unmodified scripts)."""
    path = os.environ.get(ENV_VAR)
    if not path:
        return None
    try:
        return install(path)
    except Exception as exc:  # never break the user's program over its tuning file
        log.error("%s=%s: not installed: %s", ENV_VAR, path, exc)
        return None
