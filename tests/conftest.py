import os

import pytest

# Each Inductor compile in the tests must run in this process, where the choices hook is installed.
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

SHIPPED_HEURISTICS = ("heuristics/h200.yaml", "heuristics/h100.yaml")


@pytest.fixture
def shipped_heuristics() -> str:
    """GPU tests: the shipped heuristic file measured on GPU 0's model; the test skips on any other GPU."""
    import torch

    from inductor_tune import heuristics

    props = torch.cuda.get_device_properties(0)
    mine = [p for p in SHIPPED_HEURISTICS if heuristics.device_matches(heuristics.load(p), props)]
    if not mine:
        pytest.skip(f"no shipped heuristic file is for {props.name}")
    return mine[0]
