"""A worker pool of one worker that answers every task as soon as it is dispatched: the WorkerPool
interface validate's dispatch loop uses, without processes or a GPU (tests/test_gate.py, test_app.py)."""

H200 = {"name": "NVIDIA H200", "sm_count": 132, "compute_capability": "9.0", "memory_bytes": 1, "l2_bytes": 1,
        "cuda_driver": "test", "cuda_runtime": "test", "torch": "2.11.0", "triton": "3.6.0"}


class InstantPool:
    fingerprint, ceiling_gbps = H200, 4000.0

    def __init__(self):
        self.running, self.payloads = [], []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def idle(self):
        return [] if self.running else [0]

    def busy(self):
        return bool(self.running)

    def dispatch(self, index, task):
        self.running.append(task)
        self.payloads.append(task.payload)

    def collect(self):
        done, self.running = [(t, self.answer(t)) for t in self.running], []
        return done

    def answer(self, task):
        raise NotImplementedError
