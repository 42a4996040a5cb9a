"""frerlab: an open lab for IEEE 802.1CB FRER and TSN network performance."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("frerlab")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
