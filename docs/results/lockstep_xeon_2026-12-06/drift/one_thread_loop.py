import time
def work():
    s=0
    for i in range(20000): s+=i*i
    return s
ts=[]
for _ in range(6000):
    t=time.perf_counter(); work(); ts.append(time.perf_counter()-t)
print(" ".join(f"{sorted(ts[i:i+300])[150]*1e3:.3f}" for i in range(0,6000,300)))
