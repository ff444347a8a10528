import json, statistics as st, math, sys, glob
import os
R = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "visit_length_xeon_2026-12-06", "")
def load(p):
    d = json.load(open(p)); key = d["layout"]
    return key, [r["ms"] for r in d["rounds"]][2:]
def ratios(rounds, key, timed, scale):
    return [scale * st.median(r[key][:timed]) / st.median(r["0x0"][:timed]) for r in rounds]
def rule_current(rs):
    return st.median(rs) + (max(rs) - min(rs)) / 2 < 1
def kneed(n, alpha):
    for k in range(n + 1):
        if sum(math.comb(n, j) for j in range(k, n + 1)) / 2 ** n <= alpha: return k
    return n + 1
def rule_sign(alpha, margin=1.0):
    def f(rs):
        return sum(r < 1 for r in rs) >= kneed(len(rs), alpha) and st.median(rs) < margin
    return f
rules = {"current": rule_current, "sign.125": rule_sign(0.125), "sign.05": rule_sign(0.05),
         "sign.05,med<.99": rule_sign(0.05, 0.99), "sign.02,med<.99": rule_sign(0.02, 0.99)}
sets = {"lstm gain": (sorted(glob.glob(R + "lstm_[1-6].json")), 1.0),
        "googlenet gain": (sorted(glob.glob(R + "googlenet_*.json")), 1.0),
        "A/A tie": (sorted(glob.glob(R + "lstm_aa_*.json")), 1.0),
        "A/A 3% slower": (sorted(glob.glob(R + "lstm_aa_*.json")), 1.03),
        "A/A 5% slower": (sorted(glob.glob(R + "lstm_aa_*.json")), 1.05)}
designs = [(3, 3), (4, 3), (6, 1), (8, 1), (12, 1), (8, 2), (12, 2), (16, 1)]
print("design steps | " + " | ".join(sets))
for rn, rule in rules.items():
    print("rule", rn)
    for R_, T in designs:
        cells = []
        for name, (paths, scale) in sets.items():
            n = a = 0
            for p in paths:
                key, rounds = load(p)
                for i in range(0, len(rounds) - R_ + 1):  # sliding windows
                    rs = ratios(rounds[i:i + R_], key, T, scale)
                    n += 1; a += rule(rs)
            cells.append(f"{a / n:5.0%}")
        print(f"  {R_:2d} x {T} {R_ * 2 * (1 + T):4d} | " + " | ".join(cells))
