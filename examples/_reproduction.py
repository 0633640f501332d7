"""Record what a gallery example established about its paper's claims (not an example).

Each example that reproduces a paper ends with :func:`record`, which writes one JSON file:
the paper, the example, the command that regenerates it and, per claim, the protocol as we
ran it, our numbers and a verdict.  Full-mode runs (``SKSTOCH_EXAMPLE_FAST=0``, the
published figures) write ``doc/reproduction/<example>.json``, which is committed and rendered
into the "Reproducing the papers" page (``doc/_ext/reproduction_page.py``); fast-mode runs
(tests, the CI docs build) write into ``$SKSTOCH_FIGURES_DIR/reproduction/`` instead, so that
a quick run never overwrites the published record.
"""
import json
import os
import platform
from datetime import datetime, timezone
from pathlib import Path

VERDICTS = ("reproduced", "partly", "refuted", "not attempted")
ALGORITHMS = ("paper", "ours")
ROOT = Path(__file__).resolve().parents[1]


def verdict(n_ok, n_all):
    """The verdict of a claim tested on ``n_all`` cases (data sets, models, cells) of which
    ``n_ok`` hold it: all -> 'reproduced', some -> 'partly', none -> 'refuted'."""
    return "reproduced" if n_ok == n_all else ("partly" if n_ok else "refuted")


def claim(claim, *, protocol, ours, verdict, why, algorithm="paper"):
    """One row: ``algorithm='paper'`` tests the paper's method as published (errata fixed);
    ``'ours'`` is a separate row for what our defaults do on the same protocol."""
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    return {"claim": claim, "protocol": protocol, "ours": ours, "verdict": verdict,
            "why": why, "algorithm": algorithm}


def record(paper, example, claims, *, fast):
    """Write the example's claims; returns the path written.

    ``paper`` is the paper's number ("000" to "004"); the "Reproducing the papers" page
    (``doc/_ext/reproduction_page.PAPERS``) holds each paper's citation."""
    import numpy
    import scipy
    import sklearn

    import skstoch

    payload = {
        "paper": paper,
        "example": example,
        "command": f"SKSTOCH_EXAMPLE_FAST=0 python examples/{example}",
        "mode": "fast" if fast else "full",
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "versions": {"skstoch": skstoch.__version__, "numpy": numpy.__version__,
                     "scipy": scipy.__version__, "scikit-learn": sklearn.__version__},
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "claims": list(claims),
    }
    if fast:
        out = Path(os.environ.get("SKSTOCH_FIGURES_DIR", ROOT / "examples" / "figures"))
        out = out / "reproduction"
    else:
        out = ROOT / "doc" / "reproduction"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{Path(example).stem}.json"
    path.write_text(json.dumps(payload, indent=1) + "\n")
    return path
