"""Heuristic files on the tuner's side: writing them, and what validate and evidence ask of their rules.

What a file holds, its parser and installing it into Inductor belong to the runtime
(``inductor_tune.runtime``), which a user's training process imports without the tuner.  This
module re-exports them under their old names (``heuristics.load``, ``heuristics.install``,
``heuristics.RuleSpec``, ...) and adds what only the tuner needs: writing a file (``dump``, for
``distill``), the trial config a file's rules amount to for one problem (``trial_config``), and the
reduction hints of probed kernels (``slot_hints``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
from typing import Any, Mapping, Sequence

import yaml

from .problem import ELEMENT_SIZES
from .runtime import torch_rules
from .runtime.launch import choices_for_slot
from .runtime.installation import ENV_VAR, Installation, device_matches, install, install_from_env  # noqa: F401
from .runtime.registry import applied_rules, installed_digest  # noqa: F401
from .runtime.rulefile import SAFE_DUMPER, _overlap, gpu_problem, load, parse, text_problem  # noqa: F401
from .runtime.rules import (  # noqa: F401
    FORMAT, KINDS, Evidence, GpuSpec, Heuristics, HeuristicsError, MixAutotuneSpec, MultiKernelSpec, RuleSpec,
    UnsplitSpec, mix_autotune_dict, multi_kernel_dict, rule_dict, unsplit_dict,
)
from .space import DEFAULT_FLAGS, INDUCTOR_DEFAULT, KernelSlot, SlotConfig, TrialConfig, slot_violations  # noqa: F401


def __getattr__(name: str) -> Any:
    # ``apply_rules`` (now the hook's) under its old name; importing the hook imports all of torch,
    # which reading and writing rule files must not, so only when asked for.
    if name == "apply_rules":
        from .runtime.hook import apply_rules

        return apply_rules
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- what validate needs: the TrialConfig a file's rules force for one problem ---------------------

def rule_for_slot(heur: Heuristics, slot: KernelSlot, dtype: str, hint: str | None = None) -> RuleSpec | None:
    """The rule for a probed kernel slot; non-mix slots need their reduction hint (e.g. "INNER")."""
    if not slot.mix_order and hint is None:
        return None
    kind = torch_rules.kernel_kind(hint or "", torch_rules.next_pow2(slot.rnumel), slot.mix_order)
    signature = torch_rules.kernel_signature(slot.reductions.split("+"), slot.backward) if slot.reductions else None
    return heur.lookup(kind, ELEMENT_SIZES.get(dtype), slot.rnumel, slot.xnumel, signature, slot.envelope or None)


def trial_config(heur: Heuristics, slots: Sequence[KernelSlot], dtype: str,
                 hints: Mapping[str, str] | None = None) -> TrialConfig:
    """What a compile under ``install`` forces: the config rules' slots, default elsewhere."""
    forced = []
    for slot in slots:
        rule = rule_for_slot(heur, slot, dtype, (hints or {}).get(slot.key))
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
        found = {str(k.get("reduction_hint", "")).split(".")[-1] for k in choices_for_slot(kernels, slot)}
        if len(found) == 1:
            out[slot.key] = found.pop()
    return out


# -- writing a file (``distill``) -------------------------------------------------------------


class _Flow(dict):
    """A mapping written on one line (configs, hold-out rows): the file stays readable at a glance."""


class _FlowList(list):
    pass


class _Dumper(SAFE_DUMPER):
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


def _candidates_note(provenance) -> str:
    source = provenance.get("candidates_from")
    return f"; the candidates it timed were proposed by studies of {source}" if source else ""


def _unsplit_entry(spec) -> dict[str, Any]:
    entry = unsplit_dict(spec)
    entry["rows"], entry["cols"] = _FlowList(entry["rows"]), _FlowList(entry["cols"])
    if "config" in entry:
        entry["config"] = _Flow(entry["config"])
    return entry


def _mix_autotune_entry(spec) -> dict[str, Any]:
    entry = mix_autotune_dict(spec)
    entry["rows"], entry["cols"] = _FlowList(entry["rows"]), _FlowList(entry["cols"])
    return entry


def _multi_kernel_entry(spec) -> dict[str, Any]:
    entry = multi_kernel_dict(spec)
    entry["rows"], entry["cols"] = _FlowList(entry["rows"]), _FlowList(entry["cols"])
    entry["configs"] = [_Flow(c) for c in entry["configs"]]
    return entry


def to_yaml(heur: Heuristics) -> str:
    rules = []
    for rule in heur.rules:
        entry = rule_dict(rule)
        entry["rnumel"], entry["xnumel"] = _FlowList(entry["rnumel"]), _FlowList(entry["xnumel"])
        if "config" in entry:
            entry["config"] = _Flow(entry["config"])
        rules.append(entry)
    doc = {
        "format": FORMAT,
        "gpu": dataclasses.asdict(heur.gpu),
        "rules": rules,
        **({"unsplit": [_unsplit_entry(u) for u in heur.unsplit]} if heur.unsplit else {}),
        **({"mix_autotune": [_mix_autotune_entry(m) for m in heur.mix_autotune]} if heur.mix_autotune else {}),
        **({"multi_kernel": [_multi_kernel_entry(m) for m in heur.multi_kernel]} if heur.multi_kernel else {}),
        "not_covered": list(heur.not_covered),
        "provenance": dict(heur.provenance),
        "holdout": _flow_rows(heur.holdout),
    }
    header = (
        f"# Distilled reduction-kernel heuristics for {heur.gpu.name} ({heur.gpu.fingerprint}).\n"
        "# Written by `inductor-tune distill`; every number comes from the databases named under provenance,\n"
        f"# measured on this GPU{_candidates_note(heur.provenance)}.\n"
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
