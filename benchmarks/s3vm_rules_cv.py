"""Training-side evaluation of S3VMClassifier default rules (round 4).

For each dataset/label setting of bench_s3vm.py's accuracy part and label draws 0..4: stratified
5-fold cross-validation over the labeled rows only (the held-out labels become unlabeled rows,
the fit sees nothing else), accuracy on the held-out labels; the mean over draws and the 12
settings decides whether a rule is adopted. Test accuracy is printed for information only.

Configs: base (round-3 convergence rule), knn7 / knn20 / knn50 (gamma = 1 / (2 median
distance to the k-th neighbour^2), computed on all training rows without labels), restarts3
(n_restarts=3), cstar_equal (C_star = C), warmup0.6 (C* ramp over 60% of max_iter), tolsmall
(the round-4 small-probe convergence rule; the defaults since), average (round 5: iterate
averaging, average=True), invscaling (round 5: step 0.05 / sqrt(t + 1)), fraction (post-hoc intercept so that the fraction
of unlabeled rows predicted positive equals the labeled fraction, TSVM's balance constraint).

Run: PYTHONPATH=. python benchmarks/s3vm_rules_cv.py CONFIG [n_draws]; results of the round-4
run: results/s3vm_rules_cv.md.
"""
import os, sys, time, json, warnings
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
from bench_s3vm import datasets, scale_gamma
from sklearn.preprocessing import StandardScaler
from sklearn.model_selection import train_test_split, StratifiedKFold
from sklearn.neighbors import NearestNeighbors
from skstoch import S3VMClassifier
from skstoch.datasets import make_semisupervised
warnings.simplefilter("ignore")
NDRAW = int(sys.argv[2]) if len(sys.argv) > 2 else 5

def knn_gamma(X, k):
    dist, _ = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X)
    return 1 / (2 * np.median(dist[:, k]) ** 2)

CONFIGS = {
    "base": lambda X: dict(gamma=scale_gamma(X)),
    "knn7": lambda X: dict(gamma=knn_gamma(X, 7)),
    "knn20": lambda X: dict(gamma=knn_gamma(X, 20)),
    "cstar_equal": lambda X: dict(gamma=scale_gamma(X), C_star="equal"),
    "restarts3": lambda X: dict(gamma=scale_gamma(X), n_restarts=3),
    "auto": lambda X: dict(),
    "warmup0.6": lambda X: dict(gamma=scale_gamma(X), C_star_warmup=0.6),
    "knn50": lambda X: dict(gamma=knn_gamma(X, 50)),
    "fraction": lambda X: dict(gamma=scale_gamma(X)),
    "tolsmall": lambda X: dict(gamma=scale_gamma(X)),
    # round 5 (on top of the round-4 defaults, i.e. tolsmall)
    "average": lambda X: dict(gamma=scale_gamma(X), average=True),
    "invscaling": lambda X: dict(gamma=scale_gamma(X), learning_rate="invscaling", eta0=0.05),
}
cfg = sys.argv[1]
import skstoch.semi_supervised as _ss
_ss._SMALL_PROBE_FLIPS = 1.5 if cfg in ("tolsmall", "average", "invscaling") else 0.0

def post(m, X, y):
    """'fraction': shift the intercept so the fraction of unlabeled rows predicted positive
    equals the labeled fraction (TSVM's constraint) instead of only mean f."""
    if cfg != "fraction":
        return m
    U = y == -1
    frac = np.mean(y[~U] == m.classes_[1])
    f = m.decision_function(X[U])
    thr = np.quantile(f, 1 - frac)
    m.intercept_ = m.intercept_ - thr
    return m

res = {}
t0 = time.perf_counter(); c0 = time.process_time()
for name, (X, y) in datasets().items():
    X = StandardScaler().fit_transform(X)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    kw = CONFIGS[cfg](Xtr)
    for nl in (10, 50):
        cv, te = [], []
        for s in range(NDRAW):
            ys = make_semisupervised(ytr, n_labeled=nl, random_state=s)[0]
            L = np.flatnonzero(ys != -1)
            correct = 0
            for tr, ho in StratifiedKFold(5, shuffle=True, random_state=s).split(L, ys[L]):
                ycv = ys.copy(); ycv[L[ho]] = -1
                m = post(S3VMClassifier(random_state=0, **kw).fit(Xtr, ycv), Xtr, ycv)
                correct += (m.predict(Xtr[L[ho]]) == ys[L[ho]]).sum()
            cv.append(correct / len(L))
            te.append(post(S3VMClassifier(random_state=0, **kw).fit(Xtr, ys), Xtr, ys).score(Xte, yte))
        res[f"{name}_{nl}"] = (float(np.mean(cv)), float(np.mean(te)))
        print(f"{cfg:12s} {name}_{nl:<3d} cv={100*np.mean(cv):6.2f} test={100*np.mean(te):6.2f}", flush=True)
cvm = np.mean([v[0] for v in res.values()]); tem = np.mean([v[1] for v in res.values()])
print(f"{cfg:12s} MEAN cv={100*cvm:.2f} test={100*tem:.2f} wall={time.perf_counter()-t0:.0f}s cpu={time.process_time()-c0:.0f}s")

