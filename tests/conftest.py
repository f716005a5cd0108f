import os

# Each Inductor compile in the tests must run in this process, where the choices hook is installed.
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
