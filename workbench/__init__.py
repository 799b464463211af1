"""d2k-workbench: the D2K-Bench workbench."""

__version__ = "0.1.0"
