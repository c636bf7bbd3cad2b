"""Policy networks with a flat parameter layout, evaluated for many members at once."""

from neuroplug.nets.build import build_network

__all__ = ["build_network"]
