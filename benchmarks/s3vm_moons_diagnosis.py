"""Why does S3VMClassifier trail LabelSpreading(knn) on moons with 50 labels (round 7)?

On bench_s3vm.py's moons split and its 10 label draws (diagnosis only: no default is chosen
here), compares the default fit with a narrower kernel (gamma 2x/4x/8x 'scale'), more random
features, more iterations, C* = C, iterate averaging, and the exact-kernel full-batch reference
of the same objective (benchmarks/s3vm_gap_diagnosis.py's ExactS3VM) from 0 and from the
"oracle" start (the same solver on all true training labels); J = its objective value.

Run: PYTHONPATH=. python benchmarks/s3vm_moons_diagnosis.py  (prints the table; the round-7
numbers are in results/s3vm_moons_diagnosis.md)
"""
import sys, time, warnings
import numpy as np
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from s3vm_gap_diagnosis import ExactS3VM
from sklearn.datasets import make_moons
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.semi_supervised import LabelSpreading
from skstoch import S3VMClassifier
from skstoch.datasets import make_semisupervised
X, y = make_moons(1000, noise=0.1, random_state=0)
X = StandardScaler().fit_transform(X)
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
g0 = 1.0 / (Xtr.shape[1] * Xtr.var())
print("gamma scale", g0)
draws = [make_semisupervised(ytr, n_labeled=50, random_state=s)[0] for s in range(10)]
variants = {
 "default": {},
 "gamma x2": dict(gamma=2*g0), "gamma x4": dict(gamma=4*g0), "gamma x8": dict(gamma=8*g0),
 "m=256": dict(n_components=256),
 "T=1000 tol=None": dict(max_iter=1000, tol=None),
 "C_star=C": dict(C_star="equal"),
 "average": dict(average=True),
}
res = {}
for ys in draws:
    for name, kw in variants.items():
        kw = dict(dict(gamma=g0, random_state=0), **kw)
        c = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e = S3VMClassifier(**kw).fit(Xtr, ys)
        res.setdefault(name, []).append((e.score(Xte, yte), e.score(Xtr, ytr), e.n_iter_, time.process_time()-c))
    ls = LabelSpreading(kernel="knn", n_neighbors=7, max_iter=100).fit(Xtr, ys)
    res.setdefault("LS knn", []).append((ls.score(Xte, yte), np.mean(ls.transduction_==ytr), 0, 0))
    lab = ys != -1; Y = np.where(ys == 1, 1., -1.)
    for gm in (1, 4):
        C = 10*lab.sum(); ex = ExactS3VM(Xtr, lab, Y, gm*g0, C, 0.3*C)
        b = ex.fit()
        res.setdefault(f"exact gamma x{gm}", []).append((np.mean(ex.predict(b, Xte)==yte), np.mean(ex.predict(b, Xtr)==ytr), ex.objective(b), 0))
        yall = np.where(ytr==1, 1., -1.)
        bo = ex.fit(all_labels=yall, n_iter=1500); b2 = ex.fit(beta0=bo, warmup=0.0)
        res.setdefault(f"exact gamma x{gm} oracle start", []).append((np.mean(ex.predict(b2, Xte)==yte), np.mean(ex.predict(b2, Xtr)==ytr), ex.objective(b2), 0))
for k, v in res.items():
    a = np.array(v)
    print(f"{k:32s} test {100*a[:,0].mean():6.2f} +- {100*a[:,0].std(ddof=1):4.2f}  train(transductive) {100*a[:,1].mean():6.2f}  it/J {a[:,2].mean():8.2f} cpu {a[:,3].mean():.2f}  per-draw {np.round(100*a[:,0],1).tolist()}")
