"""Record the bundled demo runs (`cassettes/*-demo*`) through the real record path with the local stand-ins.

    python scripts/record_demo.py                 # record the demo runs, except frozen ones (v2-demo)
    python scripts/record_demo.py --force         # all five, frozen ones too (they stay frozen)
    python scripts/record_demo.py --only v3-demo  # record one (repeatable)
    python scripts/record_demo.py --expect        # print the verdicts the stand-in policy will give
    python scripts/record_demo.py --only samples/v3-demo-k3   # one of the runs with samples (below)

The runs with samples (`cassettes/samples/`: prompts v2 and v3, 3 samples each, against the model
stand-in with simulated noise 0.15 (seeds 1 and 2: a stream of its own per prompt), at concurrency 1 so that the noise is drawn in one order)
show a bake-off with model noise measured. They sit one folder down so that the one-sample demo runs
keep their outputs (`cassettes list`, the sibling runs `diff` discovers) as they were.

The stand-ins are test equipment: the verdicts come from the model stand-in's deterministic policy
(`replay.sim.policy`), not from Claude. Both stand-ins are deterministic and the recorder normalises
volatile values, so recording twice gives byte-identical cassettes.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from replay.analysis.frozen import is_frozen
from replay.errors import ReplayError
from replay.core.gate import gate_rule
from replay.core.grading import grade_results
from replay.files.inputs import load_claims, load_gold
from replay.urls import normalise_learn_url
from replay.learn.wire import search_result_urls
from replay.prompts import load_prompt
from replay.schema.results import ClaimResult, FileResult, ResultsFile
from replay.schema.gold import GoldSet
from replay.schema.scores import Scores
from replay.sim.learn import Page, load_pages, search_text
from replay.sim.policy import judge_claim

REPO = Path(__file__).resolve().parents[1]
CLAIMS = Path("demo/claims")
"""Relative to the repo root, so that run manifests hold portable paths."""
PAGES = Path("demo/pages")
GOLD = Path("demo/gold-correctness-set.json")
CASSETTES = Path("cassettes")
MODEL = "claude-sonnet-5-5"
"""The model the demo runs name: the current Sonnet, whose response shape (thinking blocks) the stand-in imitates."""
BASELINE, CANDIDATE = "v2-demo", "v3-demo"


@dataclass(frozen=True)
class DemoRun:
    """One bundled run: its folder name, prompt and page snapshot."""

    name: str
    prompt: str
    snapshot: str
    samples: int = 1
    noise: float = 0.0
    """Simulated model noise (`sim model --noise`); 0: the deterministic policy."""
    seed: int = 0

    @property
    def recorded_at(self) -> str:
        """A fixed recording time per page snapshot (mid-month), so re-recording changes no byte."""
        return f"{self.snapshot}-15T09:00:00Z"


RUNS = (
    DemoRun("v1-demo", "v1", "2026-06"),
    DemoRun("v2-demo", "v2", "2026-06"),
    DemoRun("v3-demo", "v3", "2026-06"),
    DemoRun("v3-demo-2026-09", "v3", "2026-09"),
    DemoRun("v2-demo-2026-09", "v2", "2026-09"),
)
NOISY_RUNS = (
    DemoRun("samples/v2-demo-k3", "v2", "2026-06", samples=3, noise=0.15, seed=1),
    DemoRun("samples/v3-demo-k3", "v3", "2026-06", samples=3, noise=0.15, seed=2),
)
"""The demo runs with samples, recorded against simulated model noise (their verdicts are not the policy's alone)."""


# --------------------------------------------------------------------------- expected verdicts (pure)


def page_for(claim: dict[str, Any], pages: dict[str, Page]) -> tuple[str, str | None]:
    """The page the model stand-in judges a claim on: its evidence_url, else the top search result."""
    url = claim.get("evidence_url") or next(iter(search_result_urls(search_text(pages, claim["claim"]))), "")
    page = pages.get(normalise_learn_url(url)) if url else None
    return url, page.body if page is not None else None


def expected_results(
    prompt_text: str, pages: dict[str, Page], batches: Iterable[tuple[str, list[dict[str, Any]]]]
) -> ResultsFile:
    """What a run of the model stand-in gives on these pages, computed with its policy directly."""
    files = []
    for file, claims in batches:
        results = []
        for claim in claims:
            url, body = page_for(claim, pages)
            verdict = judge_claim(claim, body, prompt_text)
            results.append(ClaimResult.model_validate({"id": claim["id"], "evidence_url": url, **verdict}))
        files.append(FileResult(file=file, results=results))
    return ResultsFile(files=files)


def expected_scores(run: DemoRun, gold: GoldSet) -> tuple[ResultsFile, Scores]:
    pages = load_pages(REPO / PAGES / run.snapshot)
    batches = [(b.file, [c.model_dump(exclude_none=True) for c in b.claims]) for _, b in load_claims([REPO / CLAIMS])]
    results = expected_results(load_prompt(run.prompt).text, pages, batches)
    return results, grade_results(results, gold)


def _ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def expectation_table(gold: GoldSet) -> str:
    """A markdown table of every claim's expected verdict per run, then P/R per run and the gate."""
    runs = {run.name: expected_scores(run, gold) for run in RUNS}
    labels = {(g.file, g.id): g for g in gold.items}
    short = {"grounded": "G", "not_grounded": "**NG**", "source_silent": "S"}
    lines = [
        "| claim | gold | mode | " + " | ".join(runs) + " |",
        "|---|---|---|" + "---|" * len(runs),
    ]
    verdicts = {
        name: {(f.file, r.id): r for f in results.files for r in f.results} for name, (results, _) in runs.items()
    }
    for key, item in labels.items():
        cells = []
        for name in runs:
            r = verdicts[name].get(key)
            cell = short.get(r.judge_verdict or "", "-") if r else "-"
            if r is not None and r.rule:
                cell += f" {r.rule}"
            cells.append(cell)
        lines.append(f"| {item.id} | {item.label} | {item.mode or ''} | " + " | ".join(cells) + " |")
    lines += ["", "| run | TP | FP | FN | TN | precision | recall | accuracy |", "|---|---|---|---|---|---|---|---|"]
    for name, (_, s) in runs.items():
        lines.append(
            f"| {name} | {s.tp} | {s.fp} | {s.fn} | {s.tn} | {_ratio(s.precision)} | {_ratio(s.recall)} | {_ratio(s.accuracy)} |"
        )
    adopt, reason = gate_rule(runs[BASELINE][1], runs[CANDIDATE][1])
    lines += ["", f"Gate ({CANDIDATE} against {BASELINE}, 2026-06 pages): {reason}"]
    return "\n".join(lines)


# --------------------------------------------------------------------------- recording


def frozen_runs(runs: Iterable[DemoRun]) -> list[DemoRun]:
    """The runs whose folder is frozen (v2-demo is): kept as recorded unless --force."""
    return [run for run in runs if is_frozen(REPO / CASSETTES / run.name)]


def record(runs: list[DemoRun], *, force: bool = False) -> None:
    """Record each run with both stand-ins started in-process, through the real record path."""
    from replay.judge.model_route import ModelRoute
    from replay.judge.runner import run_judge
    from replay.sim import start_learn, start_model

    os.chdir(REPO)
    # Any free ports: loopback endpoints are stored canonically, so the port changes no byte. Caching is on,
    # as `judge` does by default; a fresh model stand-in per run keeps each run's cache accounting its own,
    # so recording one run alone gives the same bytes as recording all of them.
    with start_learn(PAGES / runs[0].snapshot, port=0) as learn:
        for run in runs:
            learn.set_pages(PAGES / run.snapshot)
            print(f"recording {CASSETTES / run.name} (prompt {run.prompt}, pages {run.snapshot})", file=sys.stderr)
            when = datetime.strptime(run.recorded_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
            os.environ["SOURCE_DATE_EPOCH"] = str(int(when.timestamp()))
            from replay.sim.noise import ModelNoise

            noise = ModelNoise(run.noise, run.seed) if run.noise else None
            with start_model(port=0, noise=noise) as model:
                run_judge(
                    run.prompt,
                    [CLAIMS],
                    CASSETTES / run.name,
                    "record",
                    model=MODEL,
                    learn_url=learn.url,
                    anthropic_base_url=model.url,
                    concurrency=1,
                    progress=False,
                    force=force,
                    route=ModelRoute(cache=True),
                    samples=run.samples,
                )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", metavar="NAME", choices=[r.name for r in (*RUNS, *NOISY_RUNS)],
                        help="record only this run (repeatable)")
    parser.add_argument("--expect", action="store_true",
                        help="print the expected verdict table (policy applied directly) without recording")
    parser.add_argument("--force", action="store_true", help="re-record runs that are frozen (v2-demo is)")
    args = parser.parse_args(argv)
    if args.expect:
        print(expectation_table(load_gold(REPO / GOLD)))
        return 0
    chosen = [r for r in (*RUNS, *NOISY_RUNS) if not args.only or r.name in args.only]
    if not args.force:
        for run in frozen_runs(chosen):
            print(f"skipping {CASSETTES / run.name}: frozen, kept as recorded (--force re-records it)", file=sys.stderr)
            chosen.remove(run)
    if not chosen:
        return 0
    try:
        record(chosen, force=args.force)
    except ReplayError as err:
        print(f"record_demo: {err}", file=sys.stderr)
        return err.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
