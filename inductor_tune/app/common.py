"""What several commands share: the one-line error, storage URLs, torch on demand, input checks."""

from __future__ import annotations

import logging
import os
import sys

from ..dbfiles import url_of as storage_url  # noqa: F401 - the app layer's name for it

# The replay suggested here writes into a database of its own: replayed into the recording itself,
# its studies would upgrade and mix with the committed measurements (tune refuses that too).
NO_GPU = (
    "no CUDA GPU is visible here: `{cmd}` measures on a GPU. Without one you can read recorded studies "
    "with `inductor-tune show db/quack.sqlite`, replay them into a separate database with `inductor-tune tune "
    "experiments/quack.yaml --replay db/quack.sqlite --storage /tmp/quack-replay.sqlite`, or run the "
    "tests with `bash .ci/run`."
)


class AppError(Exception):
    """An error reported as one line, exit status 2."""


# The errors reported as one line besides AppError, named where each is defined.  Only a module already
# imported can have raised one, so they are looked up there, and catching them imports nothing.
ONE_LINE_ERRORS = ("runtime.hook.UnsupportedTorch", "experiment.ExperimentError", "runtime.rules.HeuristicsError",
                   "patch.PatchError", "dbfiles.StoreError", "workers.WorkerStartError")
PACKAGE = __package__.rpartition(".")[0]


def one_line_errors() -> tuple[type[Exception], ...]:
    found = [AppError]
    for path in ONE_LINE_ERRORS:
        module, _, name = path.rpartition(".")
        if f"{PACKAGE}.{module}" in sys.modules:
            found.append(getattr(sys.modules[f"{PACKAGE}.{module}"], name))
    return tuple(found)


def one_line_message(exc: BaseException) -> str | None:
    """The line an error is reported as, or None for a bug (whose traceback is its report)."""
    if isinstance(exc, one_line_errors()):
        return str(exc)
    if isinstance(exc, OSError):  # a path given on the command line or in a file that cannot be used
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    return None


def configure_logging(level: int) -> None:
    """Logging at ``level`` (WARNING by default, INFO for -v, DEBUG for -vv, ERROR for -q), with Optuna's
    own chatter and warnings to match; a ``tune --gpus`` process takes its parent's level."""
    import warnings

    import optuna

    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    optuna.logging.set_verbosity(optuna.logging.INFO if level <= logging.DEBUG else max(level, optuna.logging.WARNING))
    if level >= logging.ERROR:
        warnings.simplefilter("ignore")
    elif level > logging.DEBUG:
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def default_workers(processes: int = 1) -> int:
    """Worker processes per GPU process: the CPU cores shared out, one left to each sampling parent."""
    return max(1, (os.cpu_count() or 2) // processes - 1)


def import_torch(command: str):
    """torch, imported only once a command needs it; where it cannot be, one line says so."""
    try:
        import torch
    except ImportError as exc:
        raise AppError(f"`{command}` needs torch, which cannot be imported here: {exc}") from None
    return torch


def require_gpus(torch, command: str, gpus=()) -> None:
    if not torch.cuda.is_available():
        raise AppError(NO_GPU.format(cmd=command))
    for gpu in gpus:
        if not 0 <= gpu < torch.cuda.device_count():
            raise AppError(f"GPU {gpu} does not exist: {torch.cuda.device_count()} GPU(s) visible")


def check_replay(replay: str, storage: str, problems=()) -> None:
    """Refuse a replay that would write into its own recording, or that cannot answer: one line each,
    here in the parent (a worker failing on it would only say that it exited during start-up)."""
    from ..replay import NotRecorded, ReplayBackend
    from ..store import check_url, same_database

    source = storage_url(replay)
    check_url(source, create=False)
    if same_database(source, storage):
        raise AppError(f"--replay {replay} is also the storage: a replay never writes into the recording it reads; "
                       "pass a separate --storage, e.g. --storage /tmp/replay.sqlite")
    try:
        backend = ReplayBackend(source)
        try:
            for problem in problems:
                backend.recorded_configs(problem)
        finally:
            backend.store.engine.dispose()
    except NotRecorded as exc:
        raise AppError(f"--replay: {exc}") from None


def check_readable(urls) -> None:
    """Each database read for studies opens as one (schema included), so that a foreign or newer
    database is reported now, before the GPU is asked for; opening to read writes nothing."""
    from ..store import Store

    for url in urls:
        Store(url, create=False).engine.dispose()


def same_file(a: str, b: str) -> bool:
    """Whether an output path names an input file (links followed); URLs name no file."""
    if "://" in b:
        b = b.split("sqlite:///", 1)[1] if b.startswith("sqlite:///") else ""
    try:
        return bool(b) and os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)
    except OSError:
        return False


def refuse_storage_among(storage: str, dbs, default: str) -> None:
    """Records never go into a database the command reads its studies from (it would be upgraded in place)."""
    from ..store import same_database, shown

    for db in dbs:
        if same_database(storage, storage_url(db)):
            raise AppError(f"--storage {shown(storage)} is also read as a database of studies ({db}); records go "
                           f"into a database of their own, e.g. the default {default}")


def check_out_folder(out: str) -> None:
    if os.path.exists(out) and not os.path.isdir(out):
        raise AppError(f"--out {out} exists and is not a folder")


def write_atomic(path: str, text: str) -> None:
    """Replace ``path`` only with a complete file: write beside it, then rename."""
    import tempfile

    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".inductor-tune-", dir=folder)
    os.fchmod(fd, 0o644)  # mkstemp makes it private; patches are meant to be shared
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
