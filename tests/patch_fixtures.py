"""What the patch tests share: the installed torch's version and the files the patch touches there, a
rule of every hook type, and pristine copies of those files."""

import dataclasses
import os
import shutil

import distill_fixtures as fx
import torch

from inductor_tune import heuristics
from inductor_tune import patch as patch_mod
from inductor_tune.heuristics import RuleSpec
from inductor_tune.runtime import versions
from inductor_tune.space import SlotConfig

INSTALLED = patch_mod.check_version(torch.__version__)
REGISTRY = INSTALLED >= versions.REGISTRY_TORCH  # the patch registers a reduction heuristic
HOOKED = tuple(sorted({hook.path for hook in patch_mod.hooks_for(INSTALLED)}))
FILES = ("torch/version.py", *HOOKED)
TH, CHOICES, SIMD, CODEGEN = (
    "torch/_inductor/runtime/triton_heuristics.py", "torch/_inductor/choices.py", "torch/_inductor/codegen/simd.py",
    "torch/_inductor/codegen/triton.py",
)
NEW_FILES = (patch_mod.RULES_PATH, patch_mod.REGISTRY_PATH) if REGISTRY else (patch_mod.RULES_PATH,)
H200_FILE = os.path.join(fx.ROOT, "heuristics", "h200.yaml")
ALL_ROWS = (8192, 2**31)

# One rule of every hook type, with configs from heuristics/h200.yaml (RMSNorm forward looped ->
# persistent, LayerNorm forward looped config and persistent -> looped, the fused mix-order backward
# of LayerNorm and of RMSNorm); the last one names no signature (a rule for any kernel).  The
# mix-order rule signed "sum" (config of h200.yaml's LayerNorm backward rule at 4096) is what the CPU
# harness sees of RMSNorm's backward: `_rms_backward` is compiled as a forward graph here, so its
# signature carries no "@backward" (see test_patched_torch_generates_the_rules_kernels_end_to_end).
RULES = (
    # a candidate of h200.yaml's rule there (and h200-holdout.yaml's rule); h200.yaml's own pick,
    # XBLOCK=2 warps=8, is also what Inductor's persistent configs give for these size hints
    RuleSpec("inner_looped", 2, (2048, 4096), ALL_ROWS, SlotConfig(True, 4, 4), reductions="sum"),
    RuleSpec("inner_looped", 2, (4096, 4096), ALL_ROWS, SlotConfig(False, 2, 8, R0_BLOCK=1024, num_stages=4),
             reductions="welford_reduce+welford_reduce"),
    RuleSpec("inner_persistent", 2, (256, 256), (32768, 2**31), SlotConfig(False, 128, 16, R0_BLOCK=64, num_stages=2),
             reductions="welford_reduce+welford_reduce"),
    RuleSpec("mix_order", 2, (2048, 2048), ALL_ROWS, SlotConfig(True, 8, 8, RSPLIT_SIZE=128, NUM_STAGES=3),
             reductions="sum+sum@backward"),
    RuleSpec("mix_order", 2, (4096, 8192), ALL_ROWS, SlotConfig(True, 2, 8, RSPLIT_SIZE=16, NUM_STAGES=3),
             reductions="sum@backward"),
    RuleSpec("mix_order", 2, (2048, 2048), ALL_ROWS, SlotConfig(True, 4, 8, RSPLIT_SIZE=32, NUM_STAGES=3),
             reductions="sum"),
    # the verdict winner of layernorm_fwd 8192x5120 (a looped config), for any kernel
    RuleSpec("inner_looped", 2, (8192, 8192), (8192, 32768), SlotConfig(False, 2, 8, R0_BLOCK=1024, num_stages=2)),
)


def pristine(dest) -> str:
    """Copies of the files the patch touches in the installed torch (and its version.py) under ``dest``."""
    root = patch_mod.installed_torch_root()
    for name in FILES:
        os.makedirs(os.path.join(dest, os.path.dirname(name)), exist_ok=True)
        shutil.copyfile(os.path.join(root, name), os.path.join(dest, name))
    return str(dest)


def h200_with_rules() -> heuristics.Heuristics:
    """heuristics/h200.yaml's GPU with ``RULES`` alone (its unsplit rules, and the launch configs they carry, are
    tests/test_unsplit.py's)."""
    return dataclasses.replace(heuristics.load(H200_FILE), rules=RULES, unsplit=())
