"""Steps each explored process spent exploring, from its ab.json status (graphi_auto arm).

    python3 steps.py ab.json [ab.json ...]

steps = screening visits x (discard + screening timed) + round visits x (discard + timed)
+ runoff visits x (discard + runoff timed), from the status's per-round medians (a visit per
setting timed in a round). "at 20 ms": steps x 20 ms, the exploration's length on a 20 ms
step whatever the step took that day. "20 ms steps": the same visits (screening, rounds,
runoff: which settings were timed and whether there was a runoff) sized for a 20 ms step,
with 1 discarded step a visit, 2 timed in the screening round, and T timed in the rounds and
R in the runoff: 150 ms visits (until 3e5d114) T=7, R=14; 100 ms (3e5d114) T=5, R=5; the fewest steps
lasting 60 ms (3b36cde) T=3, R=3.
"""
import json
import sys


def exploration_steps(s):
    d = s.get("discard_per_visit", 1)
    screening = len(s.get("screening_medians_ms") or {}) * (d + s.get("screening_timed_per_visit", 0))
    rounds = sum(len(r) for r in s.get("round_medians_ms") or []) * (d + s.get("timed_per_visit", 0))
    runoff = sum(len(r) for r in s.get("runoff_medians_ms") or []) * (d + s.get("runoff_timed_per_visit", 0))
    return screening + rounds + runoff


def visits(s):
    return (len(s.get("screening_medians_ms") or {}),
            sum(len(r) for r in s.get("round_medians_ms") or []),
            sum(len(r) for r in s.get("runoff_medians_ms") or []))


def at_20ms(s, timed, runoff_timed):
    screening, rounds, runoff = visits(s)
    return screening * 3 + rounds * (1 + timed) + runoff * (1 + runoff_timed)


for path in sys.argv[1:]:
    with open(path) as f:
        data = json.load(f)
    for i, run in enumerate(data["arms"]["graphi_auto"].get("rounds", [])):
        s = run.get("autotune") or {}
        if "decision" not in s or s.get("load_clients"):
            continue
        n = exploration_steps(s)
        print(f"{path} round {i}: step {s['reference_step_ms']:.1f} ms, {n} steps, "
              f"{s['exploration_s']:.2f} s, runoff {s.get('runoff')}, "
              f"chosen {s.get('chosen')}; visits {visits(s)}; 20 ms steps: 150 ms visits "
              f"{at_20ms(s, 7, 14) * 0.02:.2f} s, 100 ms {at_20ms(s, 5, 5) * 0.02:.2f} s, "
              f"60 ms {at_20ms(s, 3, 3) * 0.02:.2f} s")
