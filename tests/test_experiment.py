import pytest

from inductor_tune import experiment
from inductor_tune.experiment import ExperimentError
from inductor_tune.kernels import Shape


def _write(tmp_path, text):
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    return str(path)


def test_committed_experiments_load():
    quack = experiment.load("experiments/quack.yaml")
    assert quack.shapes[0] == Shape(32768, 256) and Shape(8192, 262144) in quack.shapes
    assert list(quack.shapes) == list(experiment.quack_shapes())
    assert quack.storage_url == "sqlite:///db/quack.sqlite"
    sweep = experiment.load("experiments/sweep_fwd.yaml")
    assert dict(sweep.grid)["log2_num_warps"] == (1, 2, 3, 4, 5) and sweep.storage_url == "sqlite:///db/sweeps.sqlite"
    for name in ("sweep_bwd", "sweep_bwd_wide"):
        assert experiment.load(f"experiments/{name}.yaml").grid
    llm = experiment.load("experiments/llm.yaml")
    assert len(llm.shapes) == 10 and set(llm.dtypes) == {"bf16"}
    assert len(llm.problems()) == 10 * len(llm.kernels)


@pytest.mark.parametrize(
    "text, message",
    [
        ("kernels: [rmsnorm_fwd]\nshapes: [1x2]\ndtypes: [bf16]\nbogus: 1\n", "unknown key(s) bogus"),
        ("kernels: [nope]\nshapes: [1x2]\ndtypes: [bf16]\n", "unknown kernel(s) nope"),
        ("kernels: [rmsnorm_fwd]\nshapes: [12x]\ndtypes: [bf16]\n", "shape '12x'"),
        ("kernels: [rmsnorm_fwd]\nshapes: [0x8]\ndtypes: [bf16]\n", "shape 8 is a single number"),
        ("kernels: [rmsnorm_fwd]\nshapes: [1x2]\ndtypes: [int8]\n", "unknown dtype(s) int8"),
        ("kernels: [rmsnorm_fwd]\nshapes: [1x2]\n", "missing required key 'dtypes'"),
        ("kernels: [rmsnorm_fwd]\nshapes: [1x2]\ndtypes: [bf16]\ntrials: -3\n", "'trials' must be a positive"),
        ("kernels: [rmsnorm_fwd]\nshapes: [1x2]\ndtypes: [bf16]\nsampler: anneal\n", "unknown sampler"),
        ("kernels: [rmsnorm_fwd]\nshapes: [1x2]\ndtypes: [bf16]\nmeasure: {rep: 3}\n", "'measure' takes only"),
        ("kernels: [rmsnorm_fwd\n", "not valid YAML at line"),
        ("- just\n- a list\n", "must be a YAML mapping"),
        ("kernels: []\nshapes: [1x2]\ndtypes: [bf16]\n", "'kernels' is empty"),
        ("kernels: [rmsnorm_fwd]\nshapes: [1x2]\ndtypes: [bf16]\ngrid: {warps: [4]}\n", "unknown grid field 'warps'"),
        ("kernels: [rmsnorm_fwd]\nshapes: [1x2]\ndtypes: [bf16]\ngrid: {log2_XBLOCK: []}\n", "non-empty list"),
        ("kernels: [rmsnorm_fwd]\nshapes: [1x2]\ndtypes: [bf16]\ngrid: {persistent: [1]}\n", "takes true/false"),
        ("kernels: [rmsnorm_fwd]\nshapes: [1x2]\ndtypes: [bf16]\ngrid: {num_stages: [true]}\n", "takes integers"),
        ("kernels: [rmsnorm_fwd]\nshapes: [1x2]\ndtypes: [bf16]\ngrid: [1, 2]\n", "'grid' must be a mapping"),
        ("problems: [rmsnorm_fwd 1x2]\nshapes: [1x2]\ndtypes: [bf16]\n", "'problems' replaces 'kernels' and 'shapes'"),
        ("problems: [rmsnorm_fwd]\ndtypes: [bf16]\n", "is not 'kernel MxN'"),
        ("problems: [nope 1x2]\ndtypes: [bf16]\n", "unknown kernel(s) nope"),
        ("problems: [rmsnorm_fwd 1by2]\ndtypes: [bf16]\n", "shape '1by2'"),
        ("problems: []\ndtypes: [bf16]\n", "'problems' is empty"),
    ],
)
def test_bad_files_give_one_clear_message(tmp_path, text, message):
    with pytest.raises(ExperimentError) as info:
        experiment.load(_write(tmp_path, text))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file():
    with pytest.raises(ExperimentError, match="does not exist"):
        experiment.load("experiments/nope.yaml")


def test_overrides_replace_and_validate():
    base = experiment.load("experiments/quack.yaml")
    exp = experiment.with_overrides(
        base, kernels="rmsnorm_bwd", shapes="32768x4096,8192x65536", dtypes="fp16,bf16", trials=7, sampler="random",
        timeout_s=30, seed=None,
    )
    assert exp.kernels == ("rmsnorm_bwd",)
    assert exp.shapes == (Shape(32768, 4096), Shape(8192, 65536))
    assert exp.dtypes == ("fp16", "bf16") and exp.trials == 7 and exp.sampler == "random" and exp.timeout_s == 30
    assert exp.seed == base.seed
    with pytest.raises(ExperimentError, match="shape"):
        experiment.with_overrides(base, shapes="32768by4096")
    with pytest.raises(ExperimentError, match="'trials'"):
        experiment.with_overrides(base, trials=0)


def test_a_problems_list_is_measured_as_listed_not_crossed(tmp_path):
    exp = experiment.load(_write(tmp_path, "problems: [rmsnorm_fwd 10x14896, softmax_bwd 3x300, rmsnorm_fwd 7x9]\n"
                                           "dtypes: [bf16, fp16]\n"))
    assert [(p.kernel, str(p.shape), p.dtype) for p in exp.problems()] == [
        ("rmsnorm_fwd", "10x14896", "bf16"), ("rmsnorm_fwd", "10x14896", "fp16"), ("softmax_bwd", "3x300", "bf16"),
        ("softmax_bwd", "3x300", "fp16"), ("rmsnorm_fwd", "7x9", "bf16"), ("rmsnorm_fwd", "7x9", "fp16")]
    only = experiment.with_overrides(exp, kernels="rmsnorm_fwd", dtypes="bf16")
    assert [(p.kernel, str(p.shape)) for p in only.problems()] == [("rmsnorm_fwd", "10x14896"), ("rmsnorm_fwd", "7x9")]
    with pytest.raises(ExperimentError, match="none of experiment"):
        experiment.with_overrides(exp, kernels="layernorm_fwd")
    with pytest.raises(ExperimentError, match="--shapes does not apply"):
        experiment.with_overrides(exp, shapes="1x2")


def test_minimal_traffic_counts_the_tensors_the_op_must_touch():
    from inductor_tune.kernels import get_kernel

    shape = Shape(1024, 4096)
    act = 1024 * 4096 * 2
    assert get_kernel("rmsnorm_fwd").minimal_bytes(shape, "bf16") == 2 * act + 4096 * 4
    assert get_kernel("layernorm_bwd").minimal_bytes(shape, "bf16") == 3 * act + 3 * 4096 * 4
    assert get_kernel("softmax_bwd").minimal_bytes(shape, "bf16") == 3 * act
    assert get_kernel("add_rmsnorm_fwd").minimal_bytes(shape, "fp32") == 4 * 1024 * 4096 * 4 + 4096 * 4
