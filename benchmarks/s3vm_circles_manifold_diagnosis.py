"""circles, 10 labels (bench_s3vm.py split and draws): per-draw test accuracy at manifold_weight 0/30/100/300
and, for draws below 99 %, the last history records (labeled, manifold, unlabeled loss) and max |f|.
Run: PYTHONPATH=. python benchmarks/s3vm_circles_manifold_diagnosis.py"""
import sys, warnings, numpy as np
from sklearn.datasets import make_circles
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from skstoch import S3VMClassifier
from skstoch.datasets import make_semisupervised
X, y = make_circles(1000, noise=0.05, factor=0.5, random_state=0)
X = StandardScaler().fit_transform(X)
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
g0 = 1.0 / (Xtr.shape[1] * Xtr.var())
draws = [make_semisupervised(ytr, n_labeled=10, random_state=s)[0] for s in range(10)]
for w in [0, 30, 100, 300]:
    accs = []; info = []
    for s, ys in enumerate(draws):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e = S3VMClassifier(gamma=g0, random_state=0, manifold_weight=w).fit(Xtr, ys)
        a = e.score(Xte, yte); accs.append(a)
        h = e.history_
        if a < 0.99:
            info.append((s, round(a,3), e.n_iter_, np.round(h["labeled_loss"][-3:],2).tolist(), np.round(h.get("manifold_loss", [0])[-3:],2).tolist(), np.round(h["unlabeled_loss"][-3:],2).tolist(), float(np.abs(e.decision_function(Xte)).max())))
    print(w, np.round(100*np.array(accs),1).tolist())
    for i in info: print("   ", i)
