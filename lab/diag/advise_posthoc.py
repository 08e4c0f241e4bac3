#!/usr/bin/env python3
"""Post hoc, not a held-out check: the advisor's b35caa8 model (advise_model.h) in Python, its
constants refitted on the fit mixes' measured runs with every job's probe values taken over its
measurement window only (branch advise-window's rule), recomputed from this session's committed probe
timelines (the fit mixes' own probe timelines were pruned: the same jobs' probes of this session stand
in), then the held-out mixes predicted. It points the next session's work; the held-out mixes informed
nothing in the model, but this script was written after their results were seen.
Usage: python3 lab/diag/advise_posthoc.py (reads lab/results/advise)."""
import json,glob,os,csv,math,statistics
A=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'results', 'advise')
# window-correct probe values from this session's probe folders
P={}
for adv in sorted(glob.glob(A+'/2026*/advice.json')):
    d=os.path.dirname(adv); a=json.load(open(adv))
    for k,pr in enumerate(a['probes'],1):
        runs=glob.glob(d+'/probe-%d/*/summary.json'%k)
        if not runs or not os.path.exists(os.path.dirname(runs[0])+'/timeline.csv'): continue
        j=json.load(open(runs[0]))['jobs'][0]
        w=[(x['t0'],x['t1']) for x in j.get('windows',[])]
        r=list(csv.DictReader(open(os.path.dirname(runs[0])+'/timeline.csv')))
        def mean(col):
            v=[float(x[col]) for x in r if x[col] and any(a0<=float(x['t'])<=b0 for a0,b0 in w)]
            return sum(v)/len(v) if v else float('nan')
        e=P.setdefault(pr['job'],{'pts':{},'pw':{}})
        s=pr['sms'] or 132
        e['pts'][s]=j['window_samples_per_s']; e['pw'][s]=mean('power_w')
        if pr['sms']==0:
            e.update(rate=j['window_samples_per_s'],sm=mean('sm_active_pct')/100,dram=mean('dram_active_pct')/100,busy=mean('util_gpu_pct')/100,power=mean('power_w'))
def rate_at(pts,s):
    if s in pts: return pts[s]
    ss=sorted(pts); below=[x for x in ss if x<s]; above=[x for x in ss if x>s]
    if below and above: s1,s2=below[-1],above[0]
    elif below: s1,s2=(below[-2],below[-1]) if len(below)>1 else (below[-1],None)
    else: s1,s2=(above[0],above[1]) if len(above)>1 else (above[0],None)
    if s2 is None: return pts[s1]*min(1,s/s1)
    if s1>s2: s1,s2=s2,s1
    r1,r2=pts[s1],pts[s2]
    b=(1/r1-1/r2)/(1/s1-1/s2); a=1/r2-b/s2
    if b<0: a,b=1/r2,0
    if a<0: a,b=0,s2/r2
    return 1/(a+b/s)
runs=[]
mixes={l.split('|')[0]:l.strip().split('|') for l in open(A+'/mixes.txt') if l.strip()}
for name,(n,mix,prec,role) in mixes.items():
    f=glob.glob(A+'/'+name+'/*-advise-*/check.json')
    if not f: continue
    d=os.path.dirname(f[0]); a=json.load(open(d+'/advice.json')); c=json.load(open(f[0]))
    preds={p['label']:p for p in a['predictions']}
    lab2job={}
    for pr in a['probes']:
        pass
    # map labels to job specs: probes list job spec; labels from read_off_law or predictions
    specs=[p['job'] for p in a['probes'] if p['sms']==0]
    for m in c['modes']:
        if not m.get('measured'): continue
        pr=preds[m['label']]
        jobs=[]
        for jj,pj in zip(m['jobs'],pr['jobs']):
            lab=jj['label']
            spec=[s for s in specs if s.startswith(lab)] or \
                 [s for s in specs if s.startswith({'S':'resnet26','M':'resnet50','L':'resnet152','XL':'dlrm'}.get(lab,'?'))]
            spec=spec[0]
            if spec not in P: spec=None
            jobs.append(dict(label=lab,spec=spec,sms=pj.get('sms'),meas=jj['measured']))
        if any(j['spec'] is None for j in jobs): continue
        kind='naive' if m['mode']=='naive' else 'streams' if m['mode']=='streams' else 'shared' if m['label']=='mps' else ('green' if m['mode']=='green' else 'part')
        runs.append(dict(name=name,role=role,label=m['label'],kind=kind,jobs=jobs,stp=m['stp']['median'],lo=m['stp']['min'],hi=m['stp']['max']))
def predict(r,k):
    sw,kp,vic,bw,sc,pc,gc=k
    n=len(r['jobs']); pr=[P[j['spec']] for j in r['jobs']]
    d=[p['sm'] for p in pr]; B=[p['dram'] for p in pr]
    f=[rate_at(p['pts'],j['sms'])/p['rate'] if r['kind'] in('part','green') else 1 for p,j in zip(pr,r['jobs'])]
    out=[]
    for i in range(n):
        if r['kind']=='naive': q=(1-sw)/n
        elif r['kind'] in('shared','streams'):
            q=1/(1+kp*(sum(d)-d[i])/max(0.01,d[i])**vic)/(1+bw*(sum(B)-B[i]))
            if r['kind']=='streams': q*=1-sc
        else:
            q=f[i]/(1+pc*(sum(f)-f[i]))
            if r['kind']=='green': q*=1-gc
        out.append(q)
    return out
def err(k,sel):
    e=[]
    for r in runs:
        if r['role']!=sel: continue
        for q,j in zip(predict(r,k),r['jobs']): e.append(q/j['meas']-1)
    return math.sqrt(sum(x*x for x in e)/len(e))
def cd(f,k,b):
    # coordinate descent within bounds, steps halved after a round with no move (as advise_fit)
    k=list(k); st=[(hi-lo)/20 for lo,hi in b]; best=f(k)
    while max(st)>1e-6:
        moved=False
        for i in range(len(k)):
            for d in(-1,1):
                w=k[i]; k[i]=min(b[i][1],max(b[i][0],w+d*st[i])); e=f(k)
                if e<best-1e-12: best=e; moved=True
                else: k[i]=w
        if not moved: st=[x/2 for x in st]
    return k,best
k0=[0.05,1.0,0.5,0.2,0.02,0.1,0.0]
bounds=[(0,0.5),(0.1,4),(0,2),(0,2),(-0.3,0.5),(0,2),(-0.3,0.5)]
k,b=cd(lambda k: err(k,'fit'),k0,bounds)
print('refit on fit mixes with window probes:',['%.3f'%x for x in k],'fit rms %.3f'%b,'held-out rms %.3f'%err(k,'held-out'))
old=[0.09764,0.902,0.405,0.1325,-0.04091,0.2225,0.0622]
print('old constants on window probes: held-out rms %.3f'%err(old,'held-out'))
import collections
for kk,lab in ((k,'refit'),):
    by=collections.defaultdict(list); recs=[]
    bymix=collections.defaultdict(list)
    for r in runs:
        if r['role']!='held-out': continue
        stp=sum(predict(r,kk)); by[r['kind']].append(abs(stp/r['stp']-1)); bymix[r['name']].append((stp,r))
    for kind,v in sorted(by.items()): print(' ',kind,'median %.3f'%statistics.median(v))
    ok=0
    for name,v in bymix.items():
        best=max(v,key=lambda x:x[1]['stp'])[1]; rec=max(v,key=lambda x:x[0])[1]
        within = rec is best or rec['hi']>=best['lo'] or (best['stp']-rec['stp'])/best['stp']<=0.03
        ok+=within; print('   %-12s rec %-40s best %-40s %s'%(name,rec['label'],best['label'],'ok' if within else 'MISS'))
    print('  within:',ok,'of',len(bymix))
