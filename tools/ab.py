#!/usr/bin/env python3
"""A/B comparison of stock TensorFlow and GRAPHI on one step: the same as ``graphi-tf ab``.

  tools/ab.py --model lstm --size small --repeats 5
  tools/ab.py --script my_step.py --arms stock_default,graphi_tuned --warmup 20 --steps 20
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from graphi_tf.lab.ab import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
