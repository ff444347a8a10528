"""The graphi-tf command line."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Optional, Sequence


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="graphi-tf", description="GRAPHI executor for TensorFlow.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, usable cores, tiles and the team layout in force")
    args = parser.parse_args(argv)
    if args.command == "info":
        import graphi_tf

        json.dump(graphi_tf.info(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
