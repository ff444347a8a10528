"""Replays recorded alternating visits under decision rules and exploration designs.

Pure Python, no TensorFlow: `python3 replay.py > replay.txt`. The records are those of
../visit_length_xeon_2026-12-06/ (one process alternating stock with 2x1, or stock with
itself, 40 rounds of visits of 1 discarded + 16 timed steps; 2-vCPU Xeon, model 207).
A window of R consecutive rounds (after the first 2) takes the first T timed steps of
each visit; windows start at every round, so they overlap and are not independent.
"""
import glob
import json
import math
import os
import statistics as st

RECORDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "visit_length_xeon_2026-12-06", "")


def load(path):
    d = json.load(open(path))
    return d["layout"], [r["ms"] for r in d["rounds"]][2:]


def ratios(rounds, key, timed, scale):
    return [scale * st.median(r[key][:timed]) / st.median(r["0x0"][:timed]) for r in rounds]


def wins_needed(n, alpha=0.125):
    """The native WinsNeeded: the least k with P(at least k of n fair coin flips) <= alpha."""
    for k in range(n + 1):
        if sum(math.comb(n, j) for j in range(k, n + 1)) / 2 ** n <= alpha:
            return k
    return n + 1


def half_range_rule(rs):
    """The rule until 2026-12-07: median + half the range < 1 (2 rounds at least)."""
    return len(rs) >= 2 and st.median(rs) + (max(rs) - min(rs)) / 2 < 1


def sign_rule(rs, alpha=0.125):
    return len(rs) >= 3 and sum(r < 1 for r in rs) >= wins_needed(len(rs), alpha)


def curtailed(rs, planned, keep_close, alpha):
    """The autotuner's rounds under the sign test: (adopted, rounds run). They end once the
    setting has WinsNeeded(planned) wins, or cannot reach them (unless keep_close and its
    median so far is below 0.98: it stays for a runoff)."""
    k = wins_needed(planned, alpha)
    wins = 0
    for n, r in enumerate(rs[:planned], 1):
        wins += r < 1
        if wins >= k:
            return True, n
        if wins + planned - n < k and not (keep_close and st.median(rs[:n]) < 0.98):
            return False, n
    return False, planned


SETS = {
    "LSTM gain": (sorted(glob.glob(RECORDS + "lstm_[1-6].json")), 1.0),
    "GoogLeNet gain": (sorted(glob.glob(RECORDS + "googlenet_*.json")), 1.0),
    "A/A tie": (sorted(glob.glob(RECORDS + "lstm_aa_*.json")), 1.0),
    "A/A 3% slower": (sorted(glob.glob(RECORDS + "lstm_aa_*.json")), 1.03),
    "A/A 5% slower": (sorted(glob.glob(RECORDS + "lstm_aa_*.json")), 1.05),
}


def windows(paths, length):
    for path in paths:
        key, rounds = load(path)
        for i in range(0, len(rounds) - length + 1):
            yield key, rounds[i:i + length]


def main():
    print("Share of windows adopted: fixed designs (rounds x timed steps a visit)")
    print("design (sign test at 1/8) | " + " | ".join(f"{name:>14}" for name in SETS))
    for name, rule in (("half range", half_range_rule), ("sign test", sign_rule)):
        for rounds_n, timed in ((3, 3), (12, 1), (16, 1)):
            cells = []
            for paths, scale in SETS.values():
                decided = [rule(ratios(w, key, timed, scale)) for key, w in windows(paths, rounds_n)]
                cells.append(f"{sum(decided) / len(decided):14.0%}")
            print(f"{name:10} {rounds_n:2d} x {timed}          | " + " | ".join(cells))
    print()
    print("The autotuner's plan: up to R rounds of 1 timed step, curtailed; then, if nothing was")
    print("adopted and the median is below 0.98, a runoff of up to M rounds, curtailed, decided")
    print("alone. Cells: share adopted, mean rounds run (runoff included).")
    print("plan, alpha   | " + " | ".join(f"{name:>14}" for name in SETS))
    for planned, runoff, alpha in ((12, 8, 0.125), (12, 12, 0.125), (16, 0, 0.125),
                                   (12, 8, 0.2), (16, 8, 0.2)):
        cells = []
        for paths, scale in SETS.values():
            adopted = used = count = 0
            for key, w in windows(paths, planned + runoff):
                rs = ratios(w, key, 1, scale)
                made, n = curtailed(rs, planned, runoff > 0, alpha)
                if not made and runoff and st.median(rs[:n]) < 0.98:
                    made, m = curtailed(rs[n:], runoff, False, alpha)
                    n += m
                adopted += made
                used += n
                count += 1
            cells.append(f"{adopted / count:6.0%} {used / count:5.1f} r")
        print(f"{planned:2d} + {runoff:2d}, {alpha:5.3f} | " + " | ".join(cells))


if __name__ == "__main__":
    main()
