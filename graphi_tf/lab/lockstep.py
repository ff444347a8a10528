"""``graphi-tf ab --lockstep CYCLES``: the arms' processes timed in short alternating phases.

On a shared VM the speed of a multi-threaded step drifts over seconds: on a 2-vCPU Xeon the
LSTM SavedModel's median over 500 steps moved between 1.9 and 3.0 ms within one stock process,
while a one-thread loop stayed within 5% (docs/design.md, "Lockstep rounds"). Whole processes
run one after another then differ by ±25% whatever they run. TensorFlow fixes its pools per
process, so the arms still need a process each; here they live side by side instead:

1. Each arm's process is started and warmed up (and, for GRAPHI auto, settled) alone, while
   the processes started before it wait on their stdin.
2. Then ``cycles`` cycles: in each, every arm in turn (the order rotated every cycle) runs
   ``discard`` untimed and ``steps`` timed steps while the others wait. With ``clients``
   (``--clients``), the cycle goes on with one serving phase per client count N: every arm
   in the same order serves N concurrent clients for ``discard_s`` untimed seconds, then for
   ``duration_s`` timed ones (``graphi_tf.lab.clients.serve``). Each cycle is one "round" of
   the report, so its ratios pair phases a second or so apart.
3. Each process is told to end, and reports as a normal arm process does (its setting, the
   autotuner's state, the proof that a stock arm ran no GRAPHI).

The protocol with the worker (``graphi_tf.lab._ab_worker --lockstep``), one JSON line per
message on its stdout: ``{"lockstep": "ready"}`` after the warm-up (with ``--clients``, after
it also settled under each client count); for each ``phase N D`` line on its stdin,
``{"step_times_ms": [...]}``; for each ``serve N D S`` line, ``{"clients_phase": {...}}``
(``clients.serve``'s statistics of the S timed seconds); after ``end``, its result. A process
that fails, exits or exceeds ``timeout`` seconds for any message fails its remaining phases;
the other arms go on.

Imports nothing of TensorFlow or GRAPHI; ``graphi_tf.lab.ab`` builds the processes' commands.
"""
from __future__ import annotations

import dataclasses
import json
import os
import selectors
import subprocess
import tempfile
import time
from typing import IO, Any, Dict, List, Optional, Sequence

# Untimed steps at the start of every phase: the first steps after a wait run on parked
# threads and caches the other processes used.
DISCARD_PER_PHASE = 3
# The same for a serving phase: the clients' first requests after a wait, untimed (seconds).
DISCARD_S_PER_SERVE_PHASE = 0.25
STDERR_TAIL_CHARS = 4000


@dataclasses.dataclass(frozen=True)
class ProcessSpec:
    """One arm's process: its name, command line and environment."""

    name: str
    cmd: List[str]
    env: Dict[str, str]


class WorkerFailed(RuntimeError):
    """A lockstep worker exited, sent something that is not a JSON object, or timed out."""


class LockstepWorker:
    """One running arm process and its line protocol. Not thread-safe (one caller)."""

    def __init__(self, spec: ProcessSpec, timeout: float):
        self.spec = spec
        self.timeout = timeout
        self.started = time.monotonic()
        self._stderr: IO[bytes] = tempfile.TemporaryFile()
        self._buffer = b""
        self._proc = subprocess.Popen(spec.cmd, env=spec.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._stderr)
        self._selector = selectors.DefaultSelector()
        assert self._proc.stdout is not None
        self._selector.register(self._proc.stdout, selectors.EVENT_READ)
        self.error: Optional[str] = None

    def read(self) -> Dict[str, Any]:
        """The worker's next JSON line; raises WorkerFailed."""
        deadline = time.monotonic() + self.timeout
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                raise WorkerFailed(f"timed out after {self.timeout:.0f} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                self._proc.wait()
                raise WorkerFailed(f"exit status {self._proc.returncode}, no JSON result on stdout")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            raise WorkerFailed(f"sent {line[:200]!r}, not a JSON object")
        if message.get("ok") is False:  # the worker failed and sent its result
            raise WorkerFailed(str(message.get("error") or "failed"))
        return message

    def wait_ready(self) -> None:
        message = self.read()
        if message.get("lockstep") != "ready":
            raise WorkerFailed(f"sent {message!r} instead of ready")

    def send(self, text: str) -> None:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write((text + "\n").encode())
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise WorkerFailed(f"exited before {text.split()[0]!r} ({e})") from None

    def phase(self, steps: int, discard: int) -> List[float]:
        self.send(f"phase {steps} {discard}")
        times = self.read().get("step_times_ms")
        if not isinstance(times, list) or len(times) != steps:
            raise WorkerFailed(f"a phase of {steps} steps returned {times!r}")
        return [float(t) for t in times]

    def serve(self, clients: int, discard_s: float, duration_s: float) -> Dict[str, Any]:
        self.send(f"serve {clients} {discard_s!r} {duration_s!r}")
        stats = self.read().get("clients_phase")
        if not isinstance(stats, dict) or stats.get("clients") != clients:
            raise WorkerFailed(f"a serving phase of {clients} clients returned {stats!r}")
        return stats

    def end(self) -> Dict[str, Any]:
        """Asks the worker to end; returns its result (``ok`` false with ``error`` if it failed)."""
        self.send("end")
        result = self.read()
        try:
            self._proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise WorkerFailed(f"did not exit within {self.timeout:.0f} s of its result") from None
        if self._proc.returncode != 0 and result.get("ok"):
            result = dict(result, ok=False, error=f"exit status {self._proc.returncode}")
        return result

    def stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-STDERR_TAIL_CHARS:]

    def kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def close(self) -> None:
        self.kill()
        self._selector.close()
        for stream in (self._proc.stdin, self._proc.stdout, self._stderr):
            if stream is not None:
                stream.close()

    def wall_s(self) -> float:
        return time.monotonic() - self.started


def cycle_order(names: Sequence[str], cycle: int) -> List[str]:
    """The order in which ``names`` time their phases in cycle ``cycle``: rotated by one a cycle."""
    shift = cycle % len(names)
    return [*names[shift:], *names[:shift]]


def run_round(specs: Sequence[ProcessSpec], cycles: int, steps: int, timeout: float, *,
              discard: int = DISCARD_PER_PHASE, clients: Sequence[int] = (), duration_s: float = 0.0,
              discard_s: float = DISCARD_S_PER_SERVE_PHASE, log=None) -> Dict[str, Dict[str, Any]]:
    """Runs one lockstep round of ``specs`` (their order is the first cycle's), with a serving
    phase per client count in ``clients`` after each cycle's step phases.

    Returns, per arm name: {"phases": per cycle the timed step times (ms) or None where the
    process had failed, "client_phases": per cycle the list of its serving phases'
    statistics, one per client count (None where the process had failed before the cycle's
    last one), "result": its final result or None, "error", "stderr_tail", "wall_s",
    "ready_s" (its warm-up)}.
    """
    if clients and not duration_s > 0:
        raise ValueError(f"duration_s={duration_s!r} is invalid with clients; allowed: a number > 0")
    out: Dict[str, Dict[str, Any]] = {
        s.name: {"phases": [None] * cycles, "client_phases": [None] * cycles, "result": None, "error": None,
                 "stderr_tail": None, "wall_s": None, "ready_s": None} for s in specs}
    workers: Dict[str, LockstepWorker] = {}

    def fail(name: str, error: str) -> None:
        worker = workers.pop(name)
        worker.kill()
        out[name].update(error=error, stderr_tail=worker.stderr_tail(), wall_s=worker.wall_s())
        worker.close()
        if log is not None:
            log(f"{name}: FAILED ({error})")

    try:
        for spec in specs:  # one at a time: each warms up (and explores) alone
            workers[spec.name] = LockstepWorker(spec, timeout)
            try:
                workers[spec.name].wait_ready()
                out[spec.name]["ready_s"] = workers[spec.name].wall_s()
            except WorkerFailed as e:
                fail(spec.name, str(e))
        names = [s.name for s in specs]
        for c in range(cycles):
            order = cycle_order(names, c)
            for name in order:
                if name not in workers:
                    continue
                try:
                    out[name]["phases"][c] = workers[name].phase(steps, discard)
                except WorkerFailed as e:
                    fail(name, str(e))
            served: Dict[str, List[Dict[str, Any]]] = {name: [] for name in order}
            for n in clients:
                for name in order:
                    if name not in workers:
                        continue
                    try:
                        served[name].append(workers[name].serve(n, discard_s, duration_s))
                    except WorkerFailed as e:
                        fail(name, str(e))
            for name in order:
                if clients and name in workers:
                    out[name]["client_phases"][c] = served[name]
        for name in list(workers):
            try:
                result = workers[name].end()
            except WorkerFailed as e:
                fail(name, str(e))
                continue
            out[name]["result"] = result
            out[name]["wall_s"] = workers[name].wall_s()
            if not result.get("ok"):
                out[name].update(error=result.get("error") or "failed", stderr_tail=workers[name].stderr_tail())
    finally:
        for worker in workers.values():
            worker.close()
    return out
