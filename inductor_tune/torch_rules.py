"""Old home of ``inductor_tune.runtime.torch_rules``: this name is bound to that very module, not a copy,
so code that reads or patches its state here (tests clear ``torch_rules._UNFIT``) reaches the runtime's."""

import sys

from .runtime import torch_rules

sys.modules[__name__] = torch_rules
