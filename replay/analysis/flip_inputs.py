"""The I/O edge of flip explanation: reads run folders into `core.flips.inputs.RunInput` and runs the pure core."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from replay.core.commands import Endpoints
from replay.core.flips.inputs import Conversation, Key, PageRead, RunInput, SearchMade
from replay.core.flips.repeats import ROLES, controlled_role, flipped_keys
from replay.core.flips.report import confirm_commands, flip_report, gold_labels
from replay.errors import InputError, ReplayError
from replay.files.paths import display_path
from replay.learn.wire import FETCH_TOOL, SEARCH_TOOL, search_result_urls
from replay.prompts import BUNDLED, load_prompt
from replay.runs.folder import Run, find_runs
from replay.schema.claims import AnyClaim, Claim, ClaimRow, ClaimsBatch
from replay.schema.flips import ControlledRun, FlipReport
from replay.schema.gold import GoldSet
from replay.schema.pages import PageVersion
from replay.schema.results import ResultRow
from replay.settings import given_endpoints


def _conversation(run: Run, file: str, reads: dict[PageVersion, PageRead]) -> Conversation | None:
    """The file's Learn traffic from its cassette, else from the results' tool_calls; None if neither.
    `reads`: the page reads made so far, each held once however many conversations made it."""
    if run.cassette_path(file).is_file():
        searches = []
        for call in run.learn_calls(file):
            if call.tool == SEARCH_TOOL:
                query = str(call.arguments.get("query", ""))
                searches.append(SearchMade(query, tuple(map(sys.intern, search_result_urls(call.text)))))
        read = tuple(reads.setdefault(page, PageRead(page.url, page.sha256, page.text)) for page in run.fetched(file))
        return Conversation(read, tuple(searches))
    for fr in run.results.files:
        if fr.file == file and fr.tool_calls is not None:
            fetches, searches = [], []
            for tc in fr.tool_calls:
                if tc.tool == FETCH_TOOL and tc.url:
                    known = run.page(tc.url)
                    text = known.text if known and known.sha256 == tc.page_sha256 else None
                    fetches.append(PageRead(tc.url, tc.page_sha256, text))
                elif tc.tool == SEARCH_TOOL:
                    searches.append(SearchMade(str(tc.arguments.get("query", "")), tuple(tc.result_urls)))
            return Conversation(tuple(fetches), tuple(searches))
    return None


def _aliases(run: Run) -> frozenset[str]:
    return frozenset({run.name, str(run.path), str(run.path.resolve())})


def _pages_from(run: Run) -> str | None:
    """The manifest's `pages_from`, as an alias of the run it names (resolved path when it exists)."""
    pf = run.manifest.pages_from
    if not pf:
        return None
    for candidate in (Path(pf), run.path.parent / Path(pf).name):
        if candidate.is_dir():
            return str(candidate.resolve())
    return Path(pf).name


def _prompt(run: Run) -> tuple[str | None, str]:
    """(the prompt text, what to pass to `judge --prompt` to run it again)."""
    m = run.manifest
    text = run.prompt_text
    if text is None and m.prompt in BUNDLED:
        bundled = load_prompt(m.prompt)
        if bundled.sha256 == m.prompt_sha256:
            text = bundled.text
    if m.prompt in BUNDLED:
        arg = m.prompt
    elif Path(m.prompt).is_file():
        arg = m.prompt
    elif run.prompt_text is not None:
        arg = str(run.path / "prompt.md")
    else:
        arg = m.prompt
    return text, arg


def run_input(run: Run, claims: Sequence[ClaimsBatch] = (), same: RunInput | None = None) -> RunInput:
    """Everything the explainer needs from one run folder (cassettes are read once, here). `same`: a run
    read before, whose claims equal to this run's are held once (two runs of a diff judge the same claims)."""
    m = run.manifest
    read = run.compact_results()  # a run's thousands of verdicts, held compact
    results: dict[Key, ResultRow] = {}
    files: list[str] = []
    keys: dict[Key, Key] = {}  # each (file, id) held once, by the results and the claims
    for fr in read.files:
        files.append(fr.file)
        for r in fr.results:
            key = keys.setdefault((fr.file, r.id), (fr.file, r.id))
            results[key] = r
    files += [e.file for e in m.claims if e.file not in files]
    given = {(b.file, c.id): c for b in claims for c in b.claims}
    known: dict[Key, AnyClaim] = {}
    conversations: dict[str, Conversation] = {}
    reads: dict[PageVersion, PageRead] = {}
    texts_wanted = {k[0] for k in results}  # what the run judged, also where `--claims` is given: an edit shows
    for file in files:
        conv = _conversation(run, file, reads)
        if conv is not None:
            conversations[file] = conv
        if file in texts_wanted:
            for claim in run.claims(file) or []:
                row, key = ClaimRow.of(claim), (file, claim.id)
                seen = same.claims.get(key) if same is not None else None
                known[keys.get(key, key)] = seen if seen == row else row
        run.forget_claims()  # held compact here, one claims file's at a time
    for key, claim in given.items():  # `--claims`: for what the run does not say it judged, never over what it did
        known.setdefault(key, claim)
    for key, r in results.items():  # a results file may carry the claim text itself
        extra = r.model_extra or {}
        if key not in known and isinstance(extra.get("claim"), str) and extra["claim"]:
            known[key] = Claim(id=key[1], claim=extra["claim"], claim_type=extra.get("claim_type") or "version",
                               evidence_url=extra.get("claim_evidence_url"))
    pages = {k: PageRead(p.url, p.sha256, p.text) for k, p in run.pages.items()}
    text, arg = _prompt(run)
    return RunInput(
        name=run.name, label=str(run.path), prompt_name=m.prompt, prompt_text=text,
        prompt_sha256=m.prompt_sha256, model=m.model, versions=dict(m.versions), pages_from=_pages_from(run),
        aliases=_aliases(run), results=results, claims=known, conversations=conversations, pages=pages,
        prompt_arg=arg, claims_paths=claims_paths(run), anthropic_base_url=m.anthropic_base_url,
        stand_ins=tuple(m.stand_ins), file_errors={fr.file: fr.error for fr in read.files if fr.error},
    )


def claims_paths(run: Run) -> dict[str, str]:
    """claims file -> where its claims file is, as a command pasted in the current folder takes it (the
    manifest's recorded path when the file is not found)."""
    out = {}
    for entry in run.manifest.claims:
        found = run.claims_file_path(entry.file)
        out[entry.file] = display_path(found) if found is not None else entry.path
    return out


def discover_runs(run_a: Run, run_b: Run, exclude: Sequence[Run] = ()) -> tuple[list[Run], list[str]]:
    """Candidate controlled runs: sibling run folders (same parent as A or B) recorded with A's or B's
    prompt (same sha256) that share a claims file with them; and `file: why` for each sibling whose
    run.json cannot be read. Whether one really holds a side fixed (its model, page versions claim by
    claim) is `core.flips.repeats.controlled_role`'s decision."""
    taken = {r.path.resolve() for r in (run_a, run_b, *exclude)}
    shas = {run_a.manifest.prompt_sha256, run_b.manifest.prompt_sha256}
    files = {e.file for e in run_a.manifest.claims} | {e.file for e in run_b.manifest.claims}
    found: list[Run] = []
    skipped: list[str] = []
    for parent in dict.fromkeys([run_a.path.resolve().parent, run_b.path.resolve().parent]):
        for run in find_runs(parent):
            if run.path.resolve() in taken:
                continue
            taken.add(run.path.resolve())
            try:
                m = run.manifest
                if m.prompt_sha256 in shas and files & {e.file for e in m.claims}:
                    found.append(Run(display_path(run.path)))
            except (ReplayError, OSError) as exc:
                skipped.append(_unreadable(run, exc))
    return found, skipped


def _unreadable(run: Run, exc: Exception) -> str:
    """`file: the problem` of a sibling run folder that cannot be read."""
    if isinstance(exc, InputError):
        return f"{display_path(exc.path)}: {exc.reason}"
    return f"{display_path(run.path)}: {exc}"


SKIPPED_SHOWN = 5
"""How many skipped sibling folders a note names with their reason (the rest are counted)."""


def skipped_note(skipped: Sequence[str], why: str = "that cannot be read") -> str | None:
    """The one line saying which sibling run folders were left out, and why."""
    if not skipped:
        return None
    shown = "; ".join(skipped[:SKIPPED_SHOWN])
    more = f"; and {len(skipped) - SKIPPED_SHOWN} more" if len(skipped) > SKIPPED_SHOWN else ""
    return (f"skipped {len(skipped)} sibling run folder(s) {why} (not used to tell causes apart): "
            f"{shown}{more}")


def _claims_of(run: Run) -> dict[str, str]:
    return {e.file: e.sha256 for e in run.manifest.claims}


def untrusted_sibling(run: Run, x: RunInput, run_a: Run, run_b: Run, *, verify: bool) -> str | None:
    """Why a sibling run that would hold a side fixed may not serve as one, or None: it must hold the same
    claims as A or as B (the same claims files, byte for byte), be complete (no claims file whose
    conversation failed: a partial recording), and verify (`cassettes verify`'s checks, remembered while
    nothing it reads changes: `analysis.verify.verified`)."""
    if _claims_of(run) not in (_claims_of(run_a), _claims_of(run_b)):
        return "judged other claims files than A and B (not the same claims)"
    if x.file_errors:
        failed = sorted(x.file_errors)
        return (f"a partial recording: {len(failed)} claims file(s) failed ({', '.join(failed[:3])}"
                f"{', ...' if len(failed) > 3 else ''})")
    if verify:
        from replay.analysis.verify import verified  # replays: the SDK is imported only when a sibling is checked

        report = verified(run.path)
        if not report.ok:
            return f"does not verify ({report.problems[0]})"
    return None


def _given_role(x: RunInput, a: RunInput, b: RunInput, keys: Sequence[Key]) -> ControlledRun:
    """What a run the user named with `--with` does for the comparison (it is used even when nothing)."""
    return controlled_role(x, a, b, keys, "given") or ControlledRun(
        run=x.name, path=x.label, stand_ins=list(x.stand_ins), role=None, claims={},
        why=f"{x.name}: holds neither side fixed for a flipped claim (its prompt or its pages differ from both)",
        found="given",
    )


def explain_flips(
    run_a: Run, run_b: Run, gold: GoldSet | Mapping[Key, str] | None = None, extra_runs: Sequence[Run] = (), *,
    discover: bool = True, claims: Sequence[ClaimsBatch] = (), confirm_parent: str | None = None,
    text_only: bool = False, verify_siblings: bool = True, endpoints: Endpoints | None = None,
) -> FlipReport:
    """Explain every verdict flip from run A to run B (see `core.flips.report.flip_report`). Runs given in
    `extra_runs` are used as they are; sibling folders found by `discover_runs` only when they hold one
    side fixed for a flipped claim (most telling first: A's prompt on B's pages, then the crossed one,
    then repeats). `report.controlled_runs` says which runs were used and why, and which siblings were
    left out only because they were recorded with another model. `gold`: the gold set, or only its labels
    (`core.flips.report.gold_labels`: all a report uses of it). `text_only=True`: for the text report, flips keep only the
    evidence it reads (`core.flips.report.flip_report`); markdown, HTML and JSON show the rest. A sibling
    that would hold a side fixed is used only when `untrusted_sibling` finds nothing against it (the
    report's notes say which were skipped and why); `verify_siblings=False` leaves out its replay (for runs
    made by hand, which hold no model traffic)."""
    labels = gold if isinstance(gold, Mapping) else gold_labels(gold)
    a = run_input(run_a, claims)
    b = run_input(run_b, claims, same=a)
    keys = flipped_keys(a, b)
    given = [run_input(run, claims) for run in extra_runs]
    found: list[tuple[int, str, RunInput, ControlledRun]] = []
    not_used: list[ControlledRun] = []
    untrusted: list[str] = []
    siblings, skipped = discover_runs(run_a, run_b, extra_runs) if discover else ([], [])
    for run in siblings:
        try:
            x = run_input(run, claims)
        except (ReplayError, OSError) as exc:  # a broken folder beside the runs is not what was asked about
            skipped.append(_unreadable(run, exc))
            continue
        role = controlled_role(x, a, b, keys, "sibling folder")
        if role is not None and role.role is not None:
            why = untrusted_sibling(run, x, run_a, run_b, verify=verify_siblings)
            if why is not None:
                untrusted.append(f"{display_path(run.path)}: {why}")
                continue
            found.append((ROLES.index(role.role), x.name, x, role))
        elif role is not None:  # it would have held a side fixed but for its model: say why it was left out
            not_used.append(role)
    found.sort(key=lambda item: item[:2])
    report = flip_report(a, b, labels, [*given, *(x for _, _, x, _ in found)], text_only=text_only)
    report.controlled_runs = [_given_role(x, a, b, keys) for x in given]
    report.controlled_runs += [role for *_, role in found]
    report.controlled_runs += not_used
    parent = confirm_parent if confirm_parent is not None else str(run_b.path.parent)
    report.confirm_commands = confirm_commands(a, b, report, parent,
                                               given_endpoints() if endpoints is None else endpoints)
    if confirm_parent is not None and report.confirm_commands:  # not siblings: `diff` is told where they are
        folders = [shlex.split(cmd)[shlex.split(cmd).index("--run") + 1] for cmd in report.confirm_commands]
        report.confirm_commands.append(shlex.join(["judge-replay", "diff", display_path(run_a.path), display_path(run_b.path),
                                                   *(arg for folder in folders for arg in ("--with", folder))]))
    notes = [skipped_note(skipped), skipped_note(untrusted, "that would have served as repeats or controls")]
    report.notes = [note for note in notes if note]
    return report
