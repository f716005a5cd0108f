"""A worker pool of one worker that answers every task as soon as it is dispatched: the WorkerPool
interface the dispatch loop (workers.run_tasks) uses, without processes or a GPU (tests/test_gate.py,
test_app.py); and the answer a scripted remeasure gives."""

from inductor_tune.gpu import GpuIdentity

H200 = GpuIdentity(name="NVIDIA H200", sm_count=132, compute_capability="9.0", memory_bytes=1, l2_bytes=1,
                   cuda_driver="test", cuda_runtime="test", torch="2.11.0", triton="3.6.0")


def remeasured(times):
    """A remeasure's answer with these times and nothing failed (what a scripted pool returns)."""
    from inductor_tune.tasks import Remeasured

    return Remeasured(times, [None] * len(times), [None] * len(times))


class InstantPool:
    fingerprint, ceiling_gbps = H200, 4000.0

    def __init__(self):
        self.running, self.tasks = [], []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    size = 1

    def idle(self, limit=None):
        return [] if self.running else [0]

    def release(self, keep):
        pass

    def busy(self):
        return bool(self.running)

    def dispatch(self, index, task):
        self.running.append(task)
        self.tasks.append(task)

    def collect(self, timeout=0.5):
        done, self.running = [(t, self.answer(t)) for t in self.running], []
        return done

    def answer(self, task):
        raise NotImplementedError
