#!/usr/bin/env python3
"""Post hoc, not a held-out check: three forms of the advisor's energy per sample, each given the jobs'
measured progress (so that only the energy form is judged), against the energy per sample measured in
session 27's check runs. Form "sum" is b35caa8's (advise_predict): the sum of each job's probed power
at its samples/s (advise_power_at). Form "idle once" counts the card's idle power once: idle + the sum
of (probed power - idle). Form "idle once, held" also holds a job's power at its lowest probe's below
that probe's samples/s, where advise_power_at follows the line through the two lowest down. Probe power is taken over each probe's measurement window only (branch advise-window's rule);
idle is the median power of the probe timelines' rows with no kernel running. Written after the
held-out results were seen; it points the next change, it does not score one.
Usage: python3 lab/diag/advise_energy_posthoc.py (reads lab/results/advise)."""
import csv, glob, json, os, statistics

A = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'results', 'advise')
probes, idle_rows = {}, []
for adv in sorted(glob.glob(A + '/2026*/advice.json')):
    d = os.path.dirname(adv)
    for k, pr in enumerate(json.load(open(adv))['probes'], 1):
        runs = glob.glob(d + '/probe-%d/*/summary.json' % k)
        if not runs or not os.path.exists(os.path.dirname(runs[0]) + '/timeline.csv'): continue
        job = json.load(open(runs[0]))['jobs'][0]
        windows = [(w['t0'], w['t1']) for w in job.get('windows', [])]
        rows = list(csv.DictReader(open(os.path.dirname(runs[0]) + '/timeline.csv')))
        inside = [float(r['power_w']) for r in rows if r['power_w'] and
                  any(a <= float(r['t']) <= b for a, b in windows)]
        idle_rows += [float(r['power_w']) for r in rows if r['power_w'] and r['util_gpu_pct'] and
                      float(r['util_gpu_pct']) == 0]
        if not inside: continue
        e = probes.setdefault(pr['job'], {})
        e[pr['sms'] or 0] = (job['window_samples_per_s'], sum(inside) / len(inside))
idle = statistics.median(idle_rows)

def power_at(points, rate, line_below=True):
    """The probed power at a samples/s as advise_power_at has it: linear between the probes'
    (rate, power) points, the line through the two lowest below them (or, line_below False, the
    lowest point's power), the top point's above."""
    pts = sorted(points.values())
    if rate >= pts[-1][0] or len(pts) == 1: return pts[-1][1]
    below = [p for p in pts if p[0] <= rate]
    if not below and not line_below: return pts[0][1]
    lo, hi = (below[-1], min(p for p in pts if p[0] > rate)) if below else (pts[0], pts[1])
    if lo[0] == hi[0]: return lo[1]
    return max(0, lo[1] + (hi[1] - lo[1]) * (rate - lo[0]) / (hi[0] - lo[0]))

mixes = [l.strip().split('|') for l in open(A + '/mixes.txt') if l.strip()]
abbrev = {'S': 'resnet26', 'M': 'resnet50', 'L': 'resnet152', 'XL': 'dlrm'}
errors = {'sum': [], 'idle once': [], 'idle once, held': []}
by_jobs = {}
for name, mix, prec, role in mixes:
    for check in glob.glob(A + '/' + name + '/*-advise-*/check.json'):
        d = os.path.dirname(check)
        specs = [p['job'] for p in json.load(open(d + '/advice.json'))['probes'] if p['sms'] == 0]
        for m in json.load(open(check))['modes']:
            if not m.get('measured') or not m.get('energy_per_sample_j'): continue
            total = {'sum': 0.0, 'idle once': idle, 'idle once, held': idle}
            samples = 0.0
            for j in m['jobs']:
                spec = [s for s in specs if s.startswith(j['label'])] or \
                       [s for s in specs if s.startswith(abbrev.get(j['label'], '?'))]
                if not spec or spec[0] not in probes or 0 not in probes[spec[0]]: break
                pts = probes[spec[0]]
                rate = j['measured'] * pts[0][0]
                p = power_at(pts, rate)
                total['sum'] += p
                total['idle once'] += p - idle
                total['idle once, held'] += power_at(pts, rate, line_below=False) - idle
                samples += rate
            else:
                measured = m['energy_per_sample_j']['median']
                for form in errors:
                    err = total[form] / samples / measured - 1
                    errors[form].append(err)
                    by_jobs.setdefault((len(m['jobs']), form), []).append(err)
print('idle power %.1f W (median of %d rows)' % (idle, len(idle_rows)))
for form, e in errors.items():
    print('%-16s median |error| %.3f over %d runs' % (form, statistics.median(abs(x) for x in e), len(e)))
for (jobs, form), e in sorted(by_jobs.items()):
    print('  %d jobs %-16s median error %+.3f (n %d)' % (jobs, form, statistics.median(e), len(e)))
