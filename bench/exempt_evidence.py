"""Exempt classes need evidence: what the rule changes on labelled bundles (issue 32).

Judges each bundle with each version and reads, from the same model answers, the class the
vote files without the rule (the plurality class, as before issue 32) and with it
(``configs/taxonomy.yaml`` ``exempt_evidence``): how many failures go under exempt classes,
the class-vote confidence of those filings (what a threshold must clear, and how often such
filings were right against ``truth.json``), and the success rate the cards read, whose
evaluation rows leave exempt failures out: successes / (runs − exempt failures).

    python -m bench.exempt_evidence --bundles DIR --judge V1[,V2] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def judged_rows(bundles: list[Path], name: str) -> list[dict[str, Any]]:
    """Per bundle: truth, the judged success, the class filed before and after the rule."""
    from judge.ensemble.judge import Judge, prepare
    from judge.ensemble.version import load_judge_version
    from judge.ensemble.vote import ModelVote, vote

    version = load_judge_version(name)
    judge = Judge(version)
    rows = []
    try:
        for b in bundles:
            j = judge.judge_prepared(prepare(str(b), version))
            truth = json.loads((b / "truth.json").read_text())
            mvs = [ModelVote(a.model, a.p_attempt, a.p_success, a.failure_class,
                             a.p_failure_class) for a in j.answers]
            before = vote(mvs, version.vote)  # no evidence asked: the plurality class
            rows.append({"run_id": j.run_id, "truth_success": truth["success"],
                         "truth_class": truth["failure_class"], "success": j.success,
                         "before": before.failure_class, "after": j.failure_class,
                         "confidence": before.failure_class_confidence})
    finally:
        judge.close()
    return rows


def summarize(rows: list[dict[str, Any]], key: str, taxonomy) -> dict[str, Any]:
    """Failures, those under exempt classes, the classes, and the cards' success rate."""
    fails = [r for r in rows if not r["success"]]
    exempt = [r for r in fails if taxonomy.exempt_threshold(r[key]) is not None]
    rated = len(rows) - len(exempt)
    return {"failures": len(fails), "exempt": len(exempt),
            "exempt_right": sum(r[key] == r["truth_class"] for r in exempt),
            "classes": dict(Counter(r[key] or "unclassified" for r in fails)),
            "card_success_rate": round(sum(r["success"] for r in rows) / rated, 4)
            if rated else None}


def measure(bundles: list[Path], names: list[str]) -> dict[str, Any]:
    from judge.ensemble.taxonomy import load_taxonomy

    tax = load_taxonomy()
    out = {}
    for name in names:
        rows = judged_rows(bundles, name)
        conf = sorted(r["confidence"] for r in rows if not r["success"]
                      and tax.exempt_threshold(r["before"]) is not None)
        out[name] = {"runs": len(rows),
                     "true_success_rate": round(sum(r["truth_success"] for r in rows)
                                                / len(rows), 4),
                     "true_exempt": sum(tax.exempt_threshold(r["truth_class"]) is not None
                                        for r in rows),
                     "before": summarize(rows, "before", tax),
                     "after": summarize(rows, "after", tax),
                     "exempt_filing_confidence": {
                         "n": len(conf), "max": round(conf[-1], 4) if conf else None,
                         "median": round(conf[len(conf) // 2], 4) if conf else None}}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.exempt_evidence",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--bundles", required=True, type=Path, help="folder of bundle folders, "
                    "each with a truth.json")
    ap.add_argument("--judge", required=True, help="comma list of judge versions")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    bundles = sorted(p.parent for p in args.bundles.glob("*/truth.json"))
    r = measure(bundles, [v for v in args.judge.split(",") if v])
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    for name, v in r.items():
        b, a = v["before"], v["after"]
        print(f"{name}: {v['runs']} runs (true success rate {v['true_success_rate']}, "
              f"{v['true_exempt']} true exempt faults); failures judged {b['failures']}")
        print(f"  under exempt classes: {b['exempt']} -> {a['exempt']} (right: "
              f"{b['exempt_right']} -> {a['exempt_right']}); cards' success rate "
              f"{b['card_success_rate']} -> {a['card_success_rate']}")
        c = v["exempt_filing_confidence"]
        print(f"  class-vote confidence of the exempt filings without the rule: n {c['n']}, "
              f"median {c['median']}, max {c['max']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
