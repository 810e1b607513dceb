"""How often the adoption gate adopts a prompt no better than the baseline, and how often it adopts a better one,
against a model whose verdicts on close calls are noisy.

    python scripts/gate_calibration.py                  # 100 seeds, noise 0.15, K = 3 (takes minutes)
    python scripts/gate_calibration.py --seeds 150 --keep /tmp/gate-cal      # record once, keep the runs
    python scripts/gate_calibration.py --seeds 100 --first-seed 50 --reuse /tmp/gate-cal   # seconds

Recording is the slow part (four runs per seed against the stand-ins); the gates are cheap. `--keep` keeps
the runs, and `--reuse` grades the kept runs again without recording (the same runs give the same table):
to measure a change of the gate, or a range of seeds apart from the ones a change was developed on.

For each seed, four runs are recorded over the demo claims against the local stand-ins (test
equipment), each with K samples per claims file, the model stand-in drawing its noise from a stream of
its own (seed 2s for the baseline side, 2s+1 for the candidate side):

- (a) identical: prompt v2 against a byte-different copy of v2 (the same rules, so no real difference):
  every adoption is a false adoption;
- (b) better: prompt v2 against v3 (v3 is the better prompt on the demo gold set): every adoption is a
  right one (the power).

The single-sample gate (the seed's rule with its paired evidence, `core.gate.adoption_gate`) is applied
to sample 1 of each side (a run of K = 1); the gate that reads every sample is applied to the K-sample
runs when this checkout has it (`reads_samples`). The table gives, per gate and K, the share of seeds
adopting in (a) (false adoption) and in (b) (power).
"""

from __future__ import annotations

import argparse
import inspect
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from replay.core.gate import adoption_gate  # noqa: E402
from replay.core.grading import grade_results  # noqa: E402
from replay.core.sample_results import split  # noqa: E402
from replay.files.inputs import load_gold  # noqa: E402
from replay.files.results import load_results  # noqa: E402
from replay.prompts import load_prompt  # noqa: E402
from replay.schema.gold import GoldSet  # noqa: E402
from replay.schema.results import ResultsFile  # noqa: E402

CLAIMS = REPO / "demo" / "claims"
PAGES = REPO / "demo" / "pages" / "2026-06"
GOLD = REPO / "demo" / "gold-correctness-set.json"
MODEL = "claude-sonnet-5-5"


def copy_prompt(folder: Path) -> Path:
    """Prompt v2, byte-different (one more line end) and with the same rules."""
    path = folder / "v2-copy.md"
    path.write_text(load_prompt("v2").text + "\n", "utf-8")
    return path


def record(prompt: str, run: Path, *, samples: int, noise: float, seed: int, learn_url: str) -> Path:
    """One run of `samples` samples per claims file against a fresh noisy model stand-in (concurrency 1: the
    noise is drawn in one order, so the seed gives the same run)."""
    from replay.judge.model_route import ModelRoute
    from replay.judge.runner import run_judge
    from replay.sim import start_model
    from replay.sim.noise import ModelNoise

    with start_model(port=0, noise=ModelNoise(noise, seed)) as model:
        run_judge(prompt, [CLAIMS], run, "record", model=MODEL, learn_url=learn_url, anthropic_base_url=model.url,
                  concurrency=1, progress=False, route=ModelRoute(cache=True), samples=samples)
    return run


def first_sample(results: ResultsFile) -> ResultsFile:
    """The run as if recorded with one sample: each file's sample 1."""
    return results.model_copy(update={"samples": None, "files": [split(f)[0] for f in results.files]})


def gate(baseline: ResultsFile, candidate: ResultsFile, gold: GoldSet) -> bool:
    """Whether the adoption gate adopts the candidate (reading every sample, where the gate does)."""
    return adoption_gate(baseline, candidate, gold, baseline_scores=grade_results(baseline, gold),
                         candidate_scores=grade_results(candidate, gold)).adopt


def reads_samples() -> bool:
    """Whether this checkout's gate measures model-noise stability over samples (else only the
    single-sample gate is measured)."""
    return "required_stability" in inspect.signature(adoption_gate).parameters


def gate_both(baseline: ResultsFile, candidate: ResultsFile, gold: GoldSet, ours: bool) -> tuple[bool, bool | None]:
    """Whether the single-sample gate adopts (on sample 1 of each side), and the gate that reads every sample
    (None when this checkout has none)."""
    single = gate(first_sample(baseline), first_sample(candidate), gold)
    return single, (gate(baseline, candidate, gold) if ours else None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=100, help="seeds per comparison (default 100)")
    parser.add_argument("--first-seed", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--noise", type=float, default=0.15, help="the model stand-in's noise (default 0.15)")
    parser.add_argument("--samples", type=int, default=3, help="samples per claims file (default 3)")
    parser.add_argument("--workers", type=int, default=1,
                        help="seeds recorded at once, each in its own process (default 1; each seed's runs are "
                             "the same either way: every run has its own noisy stand-in and seed)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--keep", type=Path, help="keep the runs in this folder")
    where.add_argument("--reuse", type=Path, help="grade the runs an earlier --keep kept in this folder, recording "
                                                  "nothing (--noise and --samples are then those of the kept runs)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    os.chdir(REPO)
    gold = load_gold(GOLD)
    ours = reads_samples()
    adopted = {(gate, case): 0 for gate in ("single", "samples") for case in ("identical", "better")}
    samples, noise = args.samples, args.noise
    if args.reuse is not None:
        missing = [f"{case}-{s}-{side}" for s in seeds for case in ("identical", "better")
                   for side in ("baseline", "candidate") if not (args.reuse / f"{case}-{s}-{side}" / "results.json").is_file()]
        if missing:
            print(f"{args.reuse}: no kept run {missing[0]}{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}"
                  " (record them with --keep)", file=sys.stderr)
            return 2
        for s in seeds:
            for case in ("identical", "better"):
                baseline, cand = (load_results(args.reuse / f"{case}-{s}-{side}") for side in ("baseline", "candidate"))
                samples, noise = baseline.samples or 1, _kept_noise(args.reuse / f"{case}-{s}-baseline", noise)
                _count(adopted, {case: gate_both(baseline, cand, gold, ours)})
    else:
        work = args.keep or Path(tempfile.mkdtemp(prefix="gate-calibration-"))
        work.mkdir(parents=True, exist_ok=True)
        job = partial(_record_seed, work=work, copy=copy_prompt(work), samples=samples, noise=noise,
                      keep=args.keep is not None)
        try:
            if args.workers > 1:
                with ProcessPoolExecutor(args.workers) as pool:
                    futures = {pool.submit(job, s): s for s in seeds}
                    for done, future in enumerate(as_completed(futures), 1):
                        _count(adopted, future.result())
                        print(f"seed {futures[future]} done ({done}/{args.seeds})", file=sys.stderr)
            else:
                for done, s in enumerate(seeds, 1):
                    _count(adopted, job(s))
                    print(f"seed {s} done ({done}/{args.seeds})", file=sys.stderr)
        finally:
            if args.keep is None:
                shutil.rmtree(work, ignore_errors=True)
    n = args.seeds
    print(f"Gate calibration: {n} seeds ({seeds.start} to {seeds.stop - 1}), model stand-in noise {noise:g} "
          "(simulated), demo claims and gold set")
    print(f"  {'gate':<34} {'false adoption (v2 vs its copy)':>32} {'power (v3 over v2)':>20}")
    print(f"  {'single sample (K = 1)':<34} {adopted['single', 'identical'] / n:>32.1%} {adopted['single', 'better'] / n:>20.1%}")
    if ours:
        print(f"  {f'with samples (K = {samples})':<34} {adopted['samples', 'identical'] / n:>32.1%} "
              f"{adopted['samples', 'better'] / n:>20.1%}")
    else:
        print(f"  with samples (K = {samples}): this checkout has no gate that reads samples yet")
    how = f"graded the runs kept in {args.reuse}" if args.reuse is not None else "recorded and graded"
    print(f"  ({how} in {time.monotonic() - started:.0f} s)")
    return 0


_LEARN = ExitStack()
_LEARN_URL: list[str] = []


def _learn_url() -> str:
    """The Learn stand-in of this process (started on first use; its thread ends with the process)."""
    if not _LEARN_URL:
        from replay.sim import start_learn

        _LEARN_URL.append(_LEARN.enter_context(start_learn(PAGES, port=0)).url)
    return _LEARN_URL[0]


def _record_seed(s: int, *, work: Path, copy: Path, samples: int, noise: float,
                 keep: bool) -> dict[str, tuple[bool, bool | None]]:
    """Record one seed's four runs and grade them: per case, whether each gate adopts."""
    gold = load_gold(GOLD)
    out = {}
    for case, candidate in (("identical", str(copy)), ("better", "v3")):
        runs = [record(prompt, work / f"{case}-{s}-{side}", samples=samples, noise=noise, seed=2 * s + i,
                       learn_url=_learn_url())
                for i, (side, prompt) in enumerate((("baseline", "v2"), ("candidate", candidate)))]
        baseline, cand = (load_results(r) for r in runs)
        out[case] = gate_both(baseline, cand, gold, reads_samples())
        if not keep:
            for run in runs:
                shutil.rmtree(run, ignore_errors=True)
    return out


def _count(adopted: dict[tuple[str, str], int], seed: dict[str, tuple[bool, bool | None]]) -> None:
    for case, (single, ours_adopts) in seed.items():
        adopted["single", case] += single
        adopted["samples", case] += bool(ours_adopts)


def _kept_noise(run: Path, default: float) -> float:
    """The noise a kept run was recorded with, as its stand-in note says (`model noise P, seed S`)."""
    text = (run / "run.json").read_text("utf-8")
    at = text.find("model noise ")
    if at < 0:
        return default
    try:
        return float(text[at + len("model noise "):].split(",")[0])
    except ValueError:
        return default


if __name__ == "__main__":
    sys.exit(main())
