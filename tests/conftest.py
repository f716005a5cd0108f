import os
import uuid

import pytest
import sqlalchemy as sa

# Each Inductor compile in the tests must run in this process, where the choices hook is installed.
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

SHIPPED_HEURISTICS = ("heuristics/h200.yaml", "heuristics/h100.yaml")


PG = os.environ.get("INDUCTOR_TUNE_TEST_PG")


@pytest.fixture(params=["sqlite", "postgresql"])
def storage(request, tmp_path):
    """A new database: an SQLite file, or one on the PostgreSQL server INDUCTOR_TUNE_TEST_PG names (CI starts one),
    dropped after the test."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.sqlite'}"
        return
    if not PG:
        pytest.skip("INDUCTOR_TUNE_TEST_PG is not set (CI sets it to a local PostgreSQL server)")
    name = f"it_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(PG, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    yield sa.engine.make_url(PG).set(database=name).render_as_string(hide_password=False)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE {name} WITH (FORCE)")
    admin.dispose()


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


@pytest.fixture(scope="module")
def hooked():
    """Compiles in the module go through inductor_tune's choices hook; Inductor's own class is put back after."""
    import torch._inductor.config as inductor_config

    from inductor_tune import choices

    old = inductor_config.inductor_choices_class
    choices.install()  # drops this thread's cached choices object too
    yield
    inductor_config.inductor_choices_class = old
    choices.drop_cached_choices()
