import json, sys
for l in open(sys.argv[1]):
    if l.startswith('DONE'): print('DONE'); continue
    r=json.loads(l)
    if 'model' in r: print('--- control' if r['control'] else '--- probe', r['pid']); continue
    ru = r.get('ru', {})
    print(f"{r['kind']:18s} {r['median_ms']:8.1f}  {' '.join('%.0f'%x for x in r['ms'])}  thr={r['threads']} {ru}")
    if 'thread_cpu_ms' in r: print('      ', r['thread_cpu_ms'])
