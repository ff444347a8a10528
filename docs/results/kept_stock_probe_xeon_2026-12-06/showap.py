import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if 'done' in r: print('DONE'); continue
    if 'window' not in r: print('---', r); continue
    print(r['arm'], r['window'], r['median_ms'], r['order'], 'cpu', r['cpu_ms'], 'flt', r['minflt'], 'cs', r['nvcsw'], r['nivcsw'], r['threads'], 'n', r['nthreads'], 'rss', r['maxrss_mb'])
    if len(sys.argv) > 2: print('    ', r['masks'])
