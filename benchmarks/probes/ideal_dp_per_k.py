import pickle, sys, time, math
import numpy as np
import heuristics.partition.ideal_dp as idp
from heuristics.partition.presolve import presolve
from heuristics.partition.ideals import enumerate_ideals
from mtpp.core.problem import Problem
name = sys.argv[1]
ks = [int(x) for x in sys.argv[2].split(",")] if len(sys.argv) > 2 else [2,4,8,16,32,64]
g = pickle.load(open(f"/tmp/i75/{name}.pkl", "rb"))
m = g.machine
p = Problem(g, 2, bandwidth=m.bandwidth, memory=math.inf if m.memory is None else m.memory)
pp = presolve(p).problem
t = time.perf_counter(); lat = enumerate_ideals(pp.graph, 5_000_000); print(name, "n", pp.graph.n, "ideals", lat.count, f"enum {time.perf_counter()-t:.2f}s")
S = idp._Search
od, og = S.dp, S.greedy
stats = {}
def dp(self, k, cap, deadline):
    t = time.perf_counter(); r = od(self, k, cap, deadline); dt = time.perf_counter() - t
    print(f"    pass k={k} cap={cap:.9g} -> {'none' if r is None else ('False' if r is False else f'{r[0]:.9g}')} {dt:.2f}s", flush=True)
    return r
def greedy(self, k, cap):
    t = time.perf_counter(); r = og(self, k, cap); stats['g'] = stats.get('g', 0) + time.perf_counter() - t; stats['gn'] = stats.get('gn',0)+1
    return r
S.dp, S.greedy = dp, greedy
idp.ideal_dp_all(pp, [2], lattice=lat)  # warm jit
t = time.perf_counter()
res = idp.ideal_dp_all(pp, ks, lattice=lat, time_limit=float(sys.argv[3]) if len(sys.argv) > 3 else None)
for k, r in zip(ks, res):
    print(f"  k={k} {r.status} {r.value} t={r.wall_time:.2f}")
print(f"total {time.perf_counter()-t:.2f}s greedy {stats}")
