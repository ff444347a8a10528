import json,statistics as st,sys
d=json.load(open(sys.argv[1]))
A=d['arms']
for k in A: print(k, [round(x,2) for x in A[k]['round_medians_ms']])
for a,b in [x.split('/') for x in sys.argv[2:]]:
    r=[y/x for x,y in zip(A[a]['round_medians_ms'],A[b]['round_medians_ms'])]  # speed of a vs b = t_b/t_a
    q=st.quantiles(r,n=4)
    print(f"{a} vs {b}: median {st.median(r):.3f} IQR {q[0]:.3f}-{q[2]:.3f} all {[round(x,3) for x in r]}")
