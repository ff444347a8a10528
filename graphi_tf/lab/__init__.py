"""The A/B lab: measures GRAPHI against stock TensorFlow, and the command line.

``graphi-tf ab`` (ab, arms, the worker process ``_ab_worker``, report, bound, serving's
concurrent clients), the benchmark models (``models``) and SavedModel/.keras steps
(``external_models``), the command line (cli, cli_common, trace_cli) and the offline bundle
(bundle, bundle_check, bundle_install.sh).

The library (``graphi_tf``: config, tune, cache, info, trace) imports nothing from here, and
``import graphi_tf`` loads none of it (tests/unit/test_imports.py).
"""
