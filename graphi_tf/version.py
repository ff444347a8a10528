"""graphi_tf's own version."""

__version__ = "0.1.0"
