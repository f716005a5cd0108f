"""What a tuning problem is (kernel, shape, dtype), without torch.

The commands that only read databases and files (``show``, ``distill``, ``patch``, ...) and every
input check need these and must not pay seconds for importing torch; ``kernels`` and ``evaluate``
re-export them from their old homes.  Shapes and dtypes live in ``shapes``, which the kernel
catalog needs without this module.
"""

from __future__ import annotations

import dataclasses

from .kernels import KernelSpec, get_kernel
from .shapes import DTYPE_NAMES, ELEMENT_SIZES, Shape, next_pow2  # noqa: F401 - re-exported from their old home


@dataclasses.dataclass(frozen=True)
class Problem:
    kernel: str
    shape: Shape
    dtype: str
    seed: int = 0

    @property
    def spec(self) -> KernelSpec:
        return get_kernel(self.kernel)
