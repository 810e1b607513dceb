"""`judge-replay export`: write runs as another tool's logs (`export inspect`: Inspect AI eval logs)."""

from __future__ import annotations

from pathlib import Path

import click

from replay.cli._output import examples
from replay.errors import UsageError


@click.group("export", epilog=examples("judge-replay export inspect cassettes/v2-demo cassettes/v3-demo "
                                       "--gold demo/gold-correctness-set.json"))
def command() -> None:
    """Write runs as other tools' logs, to browse them with those tools' viewers."""


@command.command("inspect", epilog=examples(
    "judge-replay export inspect cassettes/v3-demo --gold demo/gold-correctness-set.json   # then: inspect view"))
@click.argument("runs", nargs=-1, required=True, type=click.Path(readable=False, path_type=Path))
@click.option("--gold", "gold_flag", type=click.Path(readable=False, path_type=Path),
              help="Gold set JSON: score each claim correct/incorrect and the run's P/R/F1/accuracy "
                   "(default: [tool.judge-replay] gold, if set; none: no scores).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("logs"),
              show_default=True, help="Folder the eval logs are written to (`inspect view`'s default).")
def inspect_command(runs: tuple[Path, ...], gold_flag: Path | None, out_dir: Path) -> None:
    """Write each RUN (a run folder) as an Inspect AI eval log, OUT/<run name>.eval, for `inspect view`.

    One sample per claim: the claim as its input; its conversation from the run's cassettes (the model
    turns, each microsoft_docs_search and microsoft_docs_fetch call with its reply, the pages read) as its
    messages and transcript; the judge's verdict record as its output. With a gold set, each claim is
    scored C/I and the run carries its P/R/F1/accuracy as metrics. Needs the `inspect` extra
    (pip install 'judge-replay[inspect]'). Nothing is re-run: everything comes from the recording.
    """
    from replay.export.requirement import require_inspect

    require_inspect()
    from replay.export.eval_log import eval_log, write_log
    from replay.files.inputs import load_gold
    from replay.core.display import printable
    from replay.files.paths import display_path
    from replay.runs.folder import Run
    from replay.schema.gold import CompactGold
    from replay.settings import setting_path

    loaded = [Run(path) for path in runs]
    names = [run.name for run in loaded]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"two runs named {twice[0]!r} would write the same log: export them to different --out folders")
    gold_path = setting_path("gold", gold_flag)
    gold = CompactGold.of(load_gold(gold_path)) if gold_path is not None else None
    for run in loaded:
        target = out_dir / f"{run.name}.eval"
        write_log(eval_log(run, gold, gold.name if gold else None), target)
        click.echo(f"wrote {printable(display_path(target))}")
    click.echo(f"browse them: inspect view --log-dir {printable(display_path(out_dir))}")
