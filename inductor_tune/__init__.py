"""inductor_tune: search, distil and inspect TorchInductor's reduction-kernel launch configs."""

__version__ = "0.1.0"
