"""inductor_tune: search, distil and inspect TorchInductor's reduction-kernel launch configs."""

from __future__ import annotations

import logging
import os

__version__ = "0.1.0"


def install(heuristics):
    """Make later torch.compile calls use a distilled heuristic file (see ``runtime.installation``).

    Returns a handle that is also a context manager; on a GPU other than the file's it is a no-op
    and says so in the log.
    """
    from .runtime.installation import install as _install

    return _install(heuristics)


def load_trials(db, gpu=None, kernel=None):
    """Every trial stored in a database (file, URL or ``Store``) as a pandas DataFrame, one row each:
    its study, outcome, times, GB/s, speedup over the default and launch config (``tables.load_trials``)."""
    from .tables import load_trials as _load_trials

    return _load_trials(db, gpu=gpu, kernel=kernel)


def _torch_autoload() -> None:
    """``torch.backends`` entry point, run by ``import torch``: installs $INDUCTOR_TUNE_HEURISTICS.

    It must never break ``import torch``, so every failure is logged and swallowed.
    """
    if not os.environ.get("INDUCTOR_TUNE_HEURISTICS"):
        return
    try:
        from .runtime.installation import install_from_env

        install_from_env()
    except Exception as exc:  # noqa: BLE001 - see docstring
        logging.getLogger(__name__).error("INDUCTOR_TUNE_HEURISTICS not installed: %s", exc)
