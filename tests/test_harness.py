"""The benchmark harness times cases, computes ratios and reports skipped peers."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from _harness import Case, run_benchmark, to_markdown  # noqa: E402


def test_run_benchmark_ratios_and_skips(capsys):
    calls = []

    def missing_peer():
        raise ImportError("peer not installed")

    cases = [
        Case("fast", "numpy", fit=lambda: calls.append("fast") or sum(range(10**5)) or 1,
         evaluate=lambda f: {"score": 1.0}),
        Case("external", "numpy", fit=lambda: (2, 0.5), external_timing=True),
        Case("peer", "cblearn", fit=missing_peer),
    ]
    payload = run_benchmark("smoke", "toy", cases, repeat=3, warmup=2, baseline="external",
                            write=False)
    assert calls.count("fast") == 5  # 2 warm-up + 3 timed
    rows = {r["label"]: r for r in payload["results"]}
    assert rows["external"]["median_s"] == 0.5 and rows["external"]["ratio_to_baseline"] == 1.0
    assert rows["fast"]["ratio_to_baseline"] == rows["fast"]["median_s"] / 0.5
    assert "skipped" in rows["peer"]
    # CPU time is recorded for in-process fits only; a subprocess peer's is not ours to measure
    assert rows["fast"]["median_cpu_s"] >= 0 and len(rows["fast"]["cpu_times_s"]) == 3
    assert rows["external"]["median_cpu_s"] is None
    table = to_markdown(payload)
    assert "| fast | numpy |" in table and "skipped: peer not installed" in table
    assert payload["versions"]["numpy"] and payload["machine"]["cpu_count"]
