import json

import optuna
import pytest

from inductor_tune import space
from inductor_tune.space import (
    DEFAULT_FLAGS, ConstraintViolation, GraphFlags, KernelSlot, SearchSpace, SlotConfig, TrialConfig, slot_violations,
)

FWD = KernelSlot("fw.red.x32768.r4096", False, 32768, 4096, False, False)
MIX = KernelSlot("bw.mix.x32768.r4096", True, 32768, 4096, True, True)
DX = KernelSlot("bw.red.x32768.r4096", True, 32768, 4096, False, False)
DW = KernelSlot("bw.red.x4096.r32768", True, 4096, 32768, False, False)
SPACE = SearchSpace(((DEFAULT_FLAGS, (MIX,)), (GraphFlags(True, False), (DX, DW))))


def test_fixed_config_persistent_has_no_r0_block():
    cfg = SlotConfig(persistent=True, XBLOCK=4, num_warps=8)
    assert cfg.fixed_config() == {"XBLOCK": 4, "num_warps": 8, "num_stages": 1}
    looped = SlotConfig(persistent=False, XBLOCK=2, R0_BLOCK=1024, num_warps=8, num_stages=2)
    assert looped.fixed_config() == {"XBLOCK": 2, "R0_BLOCK": 1024, "num_warps": 8, "num_stages": 2}
    mix = SlotConfig(persistent=True, XBLOCK=4, num_warps=8, RSPLIT_SIZE=64, NUM_STAGES=2)
    assert mix.fixed_config()["RSPLIT_SIZE"] == 64 and "R0_BLOCK" not in mix.fixed_config()


@pytest.mark.parametrize(
    "slot, cfg, fragment",
    [
        (FWD, SlotConfig(False, 2, 8, R0_BLOCK=8192), "exceeds next_pow2(rnumel"),
        (FWD, SlotConfig(False, 64, 32, R0_BLOCK=2048), "exceeds 65536"),
        (FWD, SlotConfig(True, 32, 32), "persistent tile"),
        (FWD, SlotConfig(True, 16, 1), "per thread"),
        (KernelSlot("k", False, 4, 128, False, True), SlotConfig(True, 8, 1), "XBLOCK=8 exceeds"),
        (KernelSlot("k", False, 8, 131072, False, False), SlotConfig(True, 1, 32), "persistent row"),
        (MIX, SlotConfig(True, 64, 8, RSPLIT_SIZE=32, NUM_STAGES=1), "exceeds RSPLIT_SIZE"),
        (MIX, SlotConfig(False, 2, 8, R0_BLOCK=64), "always persistent"),
    ],
)
def test_illegal_configs_are_named(slot, cfg, fragment):
    reasons = slot_violations(slot, cfg)
    assert any(fragment in r for r in reasons), reasons


def test_legal_configs_pass():
    assert slot_violations(FWD, SlotConfig(True, 4, 4)) == []
    assert slot_violations(FWD, SlotConfig(False, 2, 8, R0_BLOCK=1024, num_stages=3)) == []
    assert slot_violations(MIX, SlotConfig(True, 4, 8, RSPLIT_SIZE=64, NUM_STAGES=2)) == []


def test_tunable_flags_only_where_kernels_change():
    assert SPACE.tunable_flags == {"mix_order_reduction": (True, False)}
    same = SearchSpace(((DEFAULT_FLAGS, (FWD,)), (GraphFlags(False, True), (FWD,))))
    assert same.tunable_flags == {}


def test_distributions_cover_every_slot_and_flag():
    names = set(SPACE.distributions())
    assert "graph.mix_order_reduction" in names
    assert {f"{MIX.key}.log2_RSPLIT_SIZE", f"{DX.key}.persistent", f"{DW.key}.log2_R0_BLOCK"} <= names
    # XBLOCK=1 is excluded for mix-order kernels (a forced no-x-dim mix-order kernel fails codegen).
    assert SPACE.distributions()[f"{MIX.key}.log2_XBLOCK"].low == 1


def test_suggest_round_trips_through_params():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    seen = 0
    for _ in range(200):
        trial = study.ask()
        try:
            config = SPACE.suggest(trial)
        except ConstraintViolation:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            continue
        seen += 1
        assert space.config_from_params(trial.params, SPACE) == config
        assert space.params_of(config, SPACE) == trial.params
        assert TrialConfig.from_json(config.to_json()) == config
        study.tell(trial, 1.0)
    assert seen > 20


def test_structure_follows_sampled_flags():
    params = space.params_of(
        TrialConfig(
            GraphFlags(True, False),
            ((DX.key, SlotConfig(True, 1, 4)), (DW.key, SlotConfig(False, 64, 4, R0_BLOCK=16, num_stages=2))),
        ),
        SPACE,
    )
    config = space.config_from_params(params, SPACE)
    assert config.flags.mix_order_reduction is False
    assert [k for k, _ in config.slots] == [DX.key, DW.key]


def test_space_json_round_trip():
    assert SearchSpace.from_json(SPACE.to_json()) == SPACE
    data = json.loads(INDUCTOR_JSON := space.INDUCTOR_DEFAULT.to_json())
    assert data["inductor_default"] is True and TrialConfig.from_json(INDUCTOR_JSON).inductor_default


def test_slot_keys_are_stable_and_unique():
    assert space.slot_key(True, True, 10, 20, []) == "bw.mix.x10.r20"
    assert space.slot_key(False, False, 10, 20, ["fw.red.x10.r20"]) == "fw.red.x10.r20#2"


def test_enumerate_lists_each_legal_config_once():
    configs = SearchSpace(((DEFAULT_FLAGS, (FWD,)),)).enumerate()
    assert len(configs) == len(set(configs)) > 100
    for config in configs:
        ((key, cfg),) = config.slots
        assert key == FWD.key and slot_violations(FWD, cfg) == []
    persistent = [c for c in configs if c.slots[0][1].persistent]
    assert persistent and all(c.slots[0][1].R0_BLOCK is None for c in persistent)
    # Structures of flags that are not searched (identical kernels) are not enumerated twice.
    both = SearchSpace(((DEFAULT_FLAGS, (FWD,)), (GraphFlags(False, True), (FWD,)))).enumerate()
    assert len(both) == len(configs)


GRID = {"persistent": [False], "log2_XBLOCK": [0, 1], "log2_R0_BLOCK": [10, 12], "log2_num_warps": [2, 3, 4],
        "num_stages": [1]}


def test_sub_grid_narrows_enumeration_and_sampling():
    full = SearchSpace(((DEFAULT_FLAGS, (FWD,)),))
    narrowed = full.with_grid(GRID)
    configs = narrowed.enumerate()
    assert len(configs) == 2 * 2 * 3  # every combination here is legal for FWD
    assert {c.slots[0][1].R0_BLOCK for c in configs} == {1024, 4096}
    dists = narrowed.distributions()
    # A contiguous exponent range stays an ordinal IntDistribution; a gapped one becomes categorical.
    assert dists[f"{FWD.key}.log2_num_warps"] == optuna.distributions.IntDistribution(2, 4)
    assert dists[f"{FWD.key}.log2_R0_BLOCK"] == optuna.distributions.CategoricalDistribution((10, 12))
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(30):
        assert narrowed.suggest(study.ask()) in configs
    assert SearchSpace.from_json(narrowed.to_json()) == narrowed
    # Databases written before sub-grids existed store the bare list of structures.
    assert json.loads(full.to_json())[0]["slots"][0]["key"] == FWD.key
    assert SearchSpace.from_json(full.to_json()) == full


def test_sub_grid_can_pin_a_graph_flag():
    pinned = SPACE.with_grid({"mix_order_reduction": [False], "persistent": [False], "log2_XBLOCK": [0],
                              "log2_R0_BLOCK": [10], "log2_num_warps": [3], "num_stages": [1]})
    configs = pinned.enumerate()
    assert configs and all(c.flags == GraphFlags(True, False) for c in configs)
    assert {k for k, _ in configs[0].slots} == {DX.key, DW.key}
    assert "graph.mix_order_reduction" not in pinned.distributions()


@pytest.mark.parametrize(
    "grid, fragment",
    [({"warps": [1]}, "unknown grid field"), ({"log2_R0_BLOCK": [20]}, "leaves fw.red.x32768.r4096.log2_R0_BLOCK")],
)
def test_bad_sub_grids_are_refused(grid, fragment):
    with pytest.raises(ValueError, match=fragment.replace(".", r"\.")):
        SearchSpace(((DEFAULT_FLAGS, (FWD,)),)).with_grid(grid)
