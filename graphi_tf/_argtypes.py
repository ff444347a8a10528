"""argparse value types shared by the ``graphi-tf`` subcommands."""
from __future__ import annotations

import argparse
from typing import Callable


def int_at_least(low: int) -> Callable[[str], int]:
    """A type for whole numbers >= ``low``; the error names the value and the allowed range."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}; allowed: a whole number >= {low}")
        return value

    return parse
