"""What a training process runs: a distilled rule file installed into Inductor, and nothing of the tuner.

``inductor_tune.install(path)`` (or $INDUCTOR_TUNE_HEURISTICS at ``import torch``) reaches only this
package:

* ``rules``, ``rulefile``, ``launch``: what a rule file holds, its one parser, the launch configs
  and their limits;
* ``torch_rules``: the rule lookup, self-contained because ``inductor-tune patch`` copies it into torch;
* ``hook``: the ``InductorChoices`` subclass that forces configs, and the torch version check against
  ``versions`` (the one list of supported torch versions, which ``inductor-tune patch`` reads too);
* ``installation``: installing and uninstalling a file's rules; ``fallback``: compiles that a rule broke
  are retried without it;
* ``registry``: what the hook consults, set by ``install`` and by the tuner's trial plans.

Dependencies point one way: the tuner (search, studies, distill, validate, the CLI) imports from here
and registers its plans with the hook; nothing here imports the tuner, so a user's process never
loads Optuna or SQLAlchemy and what the tuner measures is what users run.  tests/test_architecture.py
holds this.  Importing the package imports no torch; the hook does, when a file is installed.
"""

from .installation import ENV_VAR, Installation, install, install_from_env  # noqa: F401
from .rulefile import load  # noqa: F401
from .rules import HeuristicsError  # noqa: F401
