"""The test suite's stand-ins for the GPU worker pool: the ``WorkerPool`` interface the tuner, crossmeasure
and validate use (``workers.run_tasks`` and a study's ask/tell loop), without processes or a GPU.

``ScriptedPool`` answers every task the moment it is dispatched through ``answer(task)``, which a test
defines; ``StudyPool`` is the one the study tests share (one forward slot, made-up times that make
XBLOCK 4 and 4 warps the best config), with ``study_experiment`` to tune on it.
"""

from inductor_tune import experiment
from inductor_tune.gpu import GpuIdentity
from inductor_tune.records import Measurement, Outcome
from inductor_tune.space import KernelSlot, TrialConfig
from inductor_tune.tasks import ProbeTask, Remeasured, RemeasureTask
from inductor_tune.workers import TaskFailure

H200 = GpuIdentity(name="NVIDIA H200", sm_count=132, compute_capability="9.0", memory_bytes=1, l2_bytes=1,
                   cuda_driver="test", cuda_runtime="test", torch="2.11.0", triton="3.6.0")


def remeasured(times):
    """A remeasure's answer with these times and nothing failed."""
    return Remeasured(times, [None] * len(times), [None] * len(times))


class ScriptedPool:
    """A pool of ``size`` workers whose answers come from ``answer(task)`` as soon as a task is dispatched;
    ``tasks`` lists every task dispatched, ``released`` every ``release(keep)``."""

    # Class attributes, so that a test can swap the GPU of every pool it will create (monkeypatch).
    size, fingerprint, ceiling_gbps = 1, H200, 4000.0

    def __init__(self, size=None, fingerprint=None):
        if size is not None:
            self.size = size
        if fingerprint is not None:
            self.fingerprint = fingerprint
        self._busy: dict[int, object] = {}
        self._done: list = []
        self.tasks: list = []
        self.concurrent: list = []
        self.released: list[int] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def idle(self, limit=None):
        return [i for i in range(min(limit or self.size, self.size)) if i not in self._busy]

    def busy(self):
        return len(self._busy)

    def release(self, keep):
        self.released.append(keep)

    def recorded_configs(self, problem):
        return None

    def dispatch(self, index, task):
        assert index not in self._busy and index < self.size
        self._busy[index] = task
        self.tasks.append(task)
        self.concurrent.append(list(self._busy.values()))
        self._done.append((index, task, self.answer(task)))

    def collect(self, timeout=0.5):
        done, self._done = self._done, []
        for index, _, _ in done:
            self._busy.pop(index)
        return [(task, result) for _, task, result in done]

    def answer(self, task):
        raise NotImplementedError


# -- the study tests' pool ----------------------------------------------------------------------

STUDY_GPU = GpuIdentity(name="NVIDIA H200", sm_count=132, compute_capability="9.0", memory_bytes=150 * 2**30,
                        l2_bytes=60 * 2**20, cuda_driver="580", cuda_runtime="13.0", torch="2.11.0+cu130",
                        triton="3.6.0")
SLOT = KernelSlot("fw.red.x32768.r4096", False, 32768, 4096, False, False)


def fake_ms(config: TrialConfig) -> float:
    """Made up: the default 0.2 ms; a config the faster the nearer XBLOCK 4 and 4 warps, persistent."""
    if config.inductor_default:
        return 0.2
    cfg = config.slot_map()[SLOT.key]
    return 0.1 + abs(cfg.XBLOCK - 4) * 0.01 + abs(cfg.num_warps - 4) * 0.005 + (0 if cfg.persistent else 0.05)


class StudyPool(ScriptedPool):
    """Four workers answering a study of ``rmsnorm_fwd 32768x4096`` with ``fake_ms``; every
    ``fail_every``-th trial times out."""

    def __init__(self, size=4, fail_every=0):
        super().__init__(size, STUDY_GPU)
        self.fail_every = fail_every

    @property
    def dispatched(self) -> int:
        return len(self.tasks)

    def answer(self, task):
        if isinstance(task, ProbeTask):
            return (SLOT,)
        if isinstance(task, RemeasureTask):
            return remeasured([[fake_ms(c) * (1 + 0.001 * r) for r in range(task.rounds)] for c in task.configs])
        if self.fail_every and self.dispatched % self.fail_every == 0:
            return TaskFailure(Outcome.TIMEOUT, "killed after exceeding the task timeout")
        return Measurement(Outcome.OK, time_ms=fake_ms(task.config), gbps=1.0, ceiling_gbps=4000.0, slots=(SLOT,))


def study_experiment(tmp_path, trials):
    return experiment.from_mapping(
        {"kernels": ["rmsnorm_fwd"], "shapes": ["32768x4096"], "dtypes": ["bf16"], "trials": trials,
         "storage": f"sqlite:///{tmp_path}/s.sqlite", "seed": 5}, "unit",
    )


class TimedByConfig(ScriptedPool):
    """Two workers on the fixture studies' GPU: the default takes 1 ms; ``slower`` configs take 1.3 ms, all others
    0.9 ms, every round."""

    def __init__(self, slower=()):
        super().__init__(2, STUDY_GPU)  # the stack the fixture studies ran on
        self.slower = set(slower)

    def answer(self, task):
        times = []
        for config in task.configs:
            cfg = None if config.inductor_default else next(iter(config.slot_map().values()))
            ms = 1.0 if cfg is None else 1.3 if cfg in self.slower else 0.9
            times.append([ms] * task.rounds)
        return remeasured(times)
