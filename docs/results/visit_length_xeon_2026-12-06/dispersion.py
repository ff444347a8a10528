"""Round-to-round spread of a record's figures by visit length T (first T timed steps of each visit).

    python3 dispersion.py lstm_1.json ...

Per T: the median over rounds of the other setting's ratio to stock, the standard deviation
over rounds of the log of that ratio ("sd"), and the standard deviation over rounds of the
log of stock's own visit median ("stock sd"). Rounds 0 and 1 are left out, as in replay.
"""
import json, statistics as st, sys, math, glob
for path in sys.argv[1:]:
    d = json.load(open(path)); k = d["layout"]
    rounds = [r["ms"] for r in d["rounds"]][2:]
    out = []
    for T in (2, 3, 5, 7, 10, 16):
        lr = [math.log(st.median(r[k][:T]) / st.median(r["0x0"][:T])) for r in rounds]
        # within-visit: sd of log median of a visit vs T for stock alone (between rounds)
        ls = [math.log(st.median(r["0x0"][:T])) for r in rounds]
        out.append(f"T={T}: ratio {math.exp(st.median(lr)):.3f} sd {st.stdev(lr):.3f} | stock sd {st.stdev(ls):.3f}")
    print(path, "\n  " + "\n  ".join(out))
