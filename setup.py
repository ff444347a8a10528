"""Builds graphi_tf's native library against the installed TensorFlow.

The compile and link flags come from tf.sysconfig, so the library matches the
TensorFlow it is built with; the TensorFlow version is recorded in
graphi_tf/_build_info.py and checked at import time.
"""
import os
import pathlib
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def _tensorflow_flags():
    import tensorflow as tf  # noqa: imported at build time only

    return tf.__version__, tf.sysconfig.get_compile_flags(), tf.sysconfig.get_link_flags(), tf.sysconfig.get_lib()


NATIVE_SOURCES = [
    "cc/teams/ready_queue.cc",
    "cc/teams/step_order.cc",
    "cc/teams/scheduler.cc",
    "cc/teams/steal_list.cc",
    "cc/platform/thread_affinity.cc",
    "cc/platform/float_environment.cc",
    "cc/platform/topology.cc",
    "cc/teams/team_layout.cc",
    "cc/teams/team_thread_pool.cc",
    "cc/teams/stock_pools.cc",
    "cc/teams/work_conserving_pool.cc",
    "cc/teams/team_set.cc",
    "cc/platform/env_settings.cc",
    "cc/teams/setting.cc",
    "cc/executor/setting_resolver.cc",
    "cc/executor/runtime.cc",
    "cc/tuning/autotuner.cc",
    "cc/executor/process_autotuner.cc",
    "cc/executor/team_devices.cc",
    "cc/executor/stock_point_device.cc",
    "cc/executor/graphi_executor.cc",
    "cc/executor/graphi_step.cc",
    "cc/platform/malloc_arenas.cc",
    "cc/executor/registration.cc",
    "cc/tuning/adoption.cc",
    "cc/profiler/cost_model.cc",
    "cc/profiler/graph_profile.cc",
    "cc/profiler/graph_registry.cc",
    "cc/tuning/graph_load.cc",
    "cc/profiler/graph_signature.cc",
    "cc/tuning/load_class.cc",
    "cc/tuning/tuning_decision.cc",
    "python/bindings.cc",
]


class BuildNative(build_ext):
    """build_ext that adds TensorFlow's flags and compiles in parallel."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = max(1, os.cpu_count() or 1)

    def build_extensions(self):
        tf_version, cflags, lflags, tf_lib = _tensorflow_flags()
        for ext in self.extensions:
            ext.extra_compile_args += cflags + [
                "-O2", "-fvisibility=hidden", "-Wno-sign-compare", "-Wno-deprecated-declarations",
                f'-DGRAPHI_BUILT_AGAINST_TF="{tf_version}"',
            ]
            # TensorFlow's framework library is found where it was at build time, or, for a
            # wheel installed elsewhere (graphi-tf bundle), beside this package in site-packages.
            ext.extra_link_args += lflags + [f"-Wl,-rpath,{tf_lib}", "-Wl,-rpath,$ORIGIN/../tensorflow", "-pthread"]
        build_info = os.path.join(os.path.dirname(os.path.abspath(__file__)), "graphi_tf", "_build_info.py")
        with open(build_info, "w") as f:
            f.write('"""Written by setup.py: the TensorFlow this build was compiled against."""\n')
            f.write(f"TF_VERSION = {tf_version!r}\n")
        if not self.inplace:
            target = os.path.join(self.build_lib, "graphi_tf", "_build_info.py")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w") as f, open(build_info) as src:
                f.write(src.read())
        super().build_extensions()


def _pybind11_include():
    import pybind11

    return pybind11.get_include()


setup(
    ext_modules=[
        Extension(
            "graphi_tf._graphi_tf",
            sources=NATIVE_SOURCES,
            # Headers too: build_ext rebuilds only when a file listed here is newer than
            # the library, and a header's inline constants or struct layout change it.
            depends=sorted(str(p) for p in pathlib.Path("cc").rglob("*.h")),
            include_dirs=[os.path.dirname(os.path.abspath(__file__)), _pybind11_include()],
            language="c++",
        )
    ],
    cmdclass={"build_ext": BuildNative},
)
