"""The golden-output cases: every `judge-replay` command on the bundled demo and the README walk-through.

Each case is one CLI invocation (`argv`, the words after `judge-replay`), where it runs (`cwd`) and what
is done first (`setup`). `tests/golden/harness.py` runs it in a sandbox of its own and compares stdout,
stderr, the exit code, the list of files the case wrote, the contents of the files named in `files`
and, for cases with stand-ins, the stand-ins' own output with `tests/golden/expected/<case>/`. Nothing
here knows a module of the `replay` package: the cases talk to the CLI only, so they survive a
restructure of the package unchanged.

The sandbox of a case (a fresh temporary folder, so every case starts with a cold parse cache, page
store and receipt folder, and nothing is left in the repository):

    <sandbox>/proj     a copy of the project's pyproject.toml, cassettes/ and demo/ (the working folder)
    <sandbox>/tmp      a folder outside the project (the README's `/tmp/my-v3`), `{TMP}` in argv
    <sandbox>/home     HOME
    <sandbox>/tmpdir   TMPDIR (what `tempfile.gettempdir()` gives the CLI)

`cwd="repo"` runs in the repository itself, read-only (JUDGE_REPLAY_NO_CACHE=1, and the harness checks
that no file of the repository changed): only there is a run "the bundled demo" (the code compares a
run's path with the `cassettes/` folder beside its own package), which changes what `drift` and
`diff --confirm` suggest. A restructure that moves the package must keep that.

Placeholders in argv, env and setup: `{TMP}` (<sandbox>/tmp), `{LEARN_URL}` and `{MODEL_URL}` (the
stand-ins' URLs, cases with `stand_ins` only).

Normalisations (applied to every stream and file of a case; see `harness.normalise`):

- always: the sandbox's absolute path -> `<SANDBOX>` (each case runs in a new temporary folder, and
  the README walk-through writes absolute paths, `--run /tmp/my-v3`, that the CLI echoes), and the
  stand-ins' ports -> `<LEARN_PORT>` / `<MODEL_PORT>` (`--port 0`: the OS picks a free port each time);
- `today` (named per case): today's UTC date as YYYYMMDD -> `<TODAY>` (drift and diff --confirm name
  the run they suggest recording `<run>-<today>`);
- `recorded_at` (named per case): the `recorded_at` of run.json / results.json -> `<RECORDED_AT>` (a
  recording without SOURCE_DATE_EPOCH stamps the wall clock);
- `versions` (named per case): in run.json's `versions`, the value of each installed distribution
  (python, anthropic, httpx, httpx2, vcrpy) -> `<installed>`, only where it equals what is installed
  (the environment, not the code under test: CI runs the suite with the lowest vcrpy too). The
  judge-replay version is kept.

Nothing else is normalised: no duration, date or order was found to vary in any other output.
"""

from __future__ import annotations

from dataclasses import dataclass, field

README_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/model-retirements"
"""The page of the README's `pages history` / `pages diff` examples (changed between the two snapshots)."""
GONE_URL = "https://learn.microsoft.com/azure/ai-foundry/foundry-models/concepts/deployment-types"
"""A page Learn could no longer retrieve in the 2026-09 snapshot (listed under its versions, by reason)."""
DEMO_RUNS = ("v1-demo", "v2-demo", "v3-demo", "v2-demo-2026-09", "v3-demo-2026-09")
SCHEMAS = ("claims", "gold", "results", "run", "grade", "gate", "diff", "drift")
DIFF_FORMATS = ("text", "markdown", "json", "html")

# Placeholders; the harness substitutes them.
TMP = "{TMP}"
LEARN_URL = "{LEARN_URL}"
MODEL_URL = "{MODEL_URL}"

DUMMY_KEY = "sk-ant-api03-golden-dummy-key-0000000000000000"
"""A key for the model stand-in, which accepts any: `judge` sends it as a real user's key would be."""
JUNE_15 = "1781514000"
"""SOURCE_DATE_EPOCH of 2026-06-15T09:00:00Z, the recording time of the demo's 2026-06 runs
(scripts/record_demo.py): a recording made with it stamps no wall-clock time."""


# --------------------------------------------------------------------------- setup steps


@dataclass(frozen=True)
class Copy:
    """Copy a file or folder inside the sandbox (paths relative to it: `proj/...`, `tmp/...`)."""

    src: str
    dst: str


@dataclass(frozen=True)
class Write:
    """Write a file (text, UTF-8) inside the sandbox."""

    path: str
    text: str


@dataclass(frozen=True)
class Append:
    """Append text to a file inside the sandbox."""

    path: str
    text: str


@dataclass(frozen=True)
class Replace:
    """Replace the one occurrence of `old` in a file with `new`."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class DeleteLines:
    """Delete lines `first`..`last` (1-based, inclusive) of a file: `sed -i 'FIRST,LASTd' FILE`."""

    path: str
    first: int
    last: int


@dataclass(frozen=True)
class Cli:
    """Run `judge-replay ARGV` first (same sandbox, env and stand-ins); its exit code must be `rc`; its
    output is not compared (the case that runs it as its own command compares it)."""

    argv: tuple[str, ...]
    rc: int = 0
    env: tuple[tuple[str, str], ...] = ()


Step = Copy | Write | Append | Replace | DeleteLines | Cli


@dataclass(frozen=True)
class StandIns:
    """Start `judge-replay sim learn --pages PAGES --port 0` and `judge-replay sim model --port 0
    MODEL_ARGS...` (fresh for the case, so the model stand-in's prompt cache starts empty, as
    scripts/record_demo.py does for each demo run), read their URLs from their first stdout line, stop
    them with SIGTERM after the case, and compare their stdout and stderr too."""

    pages: str = "demo/pages/2026-06"
    model_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]
    cwd: str = "copy"
    """"copy": <sandbox>/proj; "repo": the repository itself, read-only."""
    setup: tuple[Step, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    files: tuple[str, ...] = ()
    """Files (relative to the sandbox) whose bytes are compared after the command."""
    stand_ins: StandIns | None = None
    normalise: tuple[str, ...] = ()
    """Extra normalisations by name: "today", "recorded_at", "versions" (see the module docstring)."""
    expect: str | None = None
    """Compare with another case's expected output (a variant: warm cache, no cache)."""
    timeout: float = 120.0

    @property
    def expected_name(self) -> str:
        return self.expect or self.name


def _env(**values: str) -> tuple[tuple[str, str], ...]:
    return tuple(values.items())


NO_CACHE = _env(JUDGE_REPLAY_NO_CACHE="1")


def variants(case: Case, *, warm: bool = False, no_cache: bool = False, warm_same: bool = True) -> list[Case]:
    """The case itself plus the variants that must print the same bytes: `warm` runs the same command
    once before (parsed-cassette cache, page store and replay receipts filled: the receipt path of a
    replay answers without the SDK), `no_cache` sets JUDGE_REPLAY_NO_CACHE=1. `warm_same=False`: the
    second run is expected to differ (it has its own expected output)."""
    out = [case]
    if warm:
        first = Cli(case.argv, rc=-1, env=case.env)  # rc -1: the same as the case's own (checked by the case)
        out.append(Case(f"{case.name}--warm", case.argv, case.cwd, (*case.setup, first), case.env, case.files,
                        case.stand_ins, case.normalise, case.name if warm_same else None, case.timeout))
    if no_cache:
        out.append(Case(f"{case.name}--no-cache", case.argv, case.cwd, case.setup, (*case.env, *NO_CACHE),
                        case.files, case.stand_ins, case.normalise, case.name, case.timeout))
    return out


# --------------------------------------------------------------------------- the cases

CASES: list[Case] = []
add = CASES.extend

# ---- --help of every command and subcommand, --version, no arguments, an unknown command
HELP = (
    (), ("bakeoff",), ("judge",), ("grade",), ("diff",), ("drift",), ("pages",), ("pages", "history"),
    ("pages", "diff"), ("cassettes",), ("cassettes", "audit"), ("cassettes", "verify"), ("cassettes", "list"),
    ("sim",), ("sim", "learn"), ("sim", "model"), ("schema",),
)
for words in HELP:
    add([Case("help-" + ("-".join(words) or "main"), (*words, "--help"))])
add([
    Case("help-main-short", ("-h",)),
    Case("version", ("--version",)),
    Case("no-arguments", ()),
    Case("err-unknown-command", ("nope",)),
])

# ---- schema NAME, every name
add([Case(f"schema-{name}", ("schema", name)) for name in SCHEMAS])

# ---- bakeoff: the main job. It writes judge-bakeoff-results-<prompt>.json only where asked (--out-dir, or
# [tool.judge-replay] bakeoff-out-dir): without either, nothing is written (each case's `written` says so),
# and a second bake-off prints what the first did
add(variants(Case("bakeoff", ("bakeoff",)), warm=True, no_cache=True))
add([
    Case("bakeoff-json", ("bakeoff", "--json")),
    Case("bakeoff-markdown", ("bakeoff", "--markdown")),
    Case("bakeoff-html", ("bakeoff", "--format", "html", "--out", "bakeoff.html"), files=("proj/bakeoff.html",)),
    Case("bakeoff-no-replay", ("bakeoff", "--no-replay")),
    Case("bakeoff-out-dir", ("bakeoff", "--out-dir", f"{TMP}/results"),
         files=tuple(f"tmp/results/judge-bakeoff-results-{p}.json" for p in ("v1", "v2", "v3"))),
    Case("bakeoff-explicit-runs", ("bakeoff", "--baseline", "cassettes/v2-demo-2026-09",
                                   "--candidate", "cassettes/v3-demo-2026-09", "--out-dir", f"{TMP}/results"),
         files=("tmp/results/judge-bakeoff-results-v2.json", "tmp/results/judge-bakeoff-results-v3.json")),
])

# ---- grade: each demo run against the demo gold set, in each format
for run in DEMO_RUNS:
    add([
        Case(f"grade-{run}", ("grade", f"cassettes/{run}")),
        Case(f"grade-{run}-json", ("grade", f"cassettes/{run}", "--json")),
        Case(f"grade-{run}-markdown", ("grade", f"cassettes/{run}", "--markdown")),
    ])
add(variants(Case("grade-v3-demo-baseline", ("grade", "cassettes/v3-demo", "--baseline", "cassettes/v2-demo")),
             warm=True, no_cache=True))
add([
    Case("grade-v3-demo-baseline-json", ("grade", "cassettes/v3-demo", "--baseline", "cassettes/v2-demo", "--json")),
    Case("grade-v3-demo-baseline-markdown",
         ("grade", "cassettes/v3-demo", "--baseline", "cassettes/v2-demo", "--markdown")),
    Case("grade-v1-demo-baseline", ("grade", "cassettes/v1-demo", "--baseline", "cassettes/v2-demo")),
    Case("grade-v3-demo-2026-09-baseline",
         ("grade", "cassettes/v3-demo-2026-09", "--baseline", "cassettes/v2-demo-2026-09")),
    Case("grade-markdown-out", ("grade", "cassettes/v3-demo", "--markdown", "--out", f"{TMP}/adjudication.md"),
         files=("tmp/adjudication.md",)),
    Case("grade-results-file", ("grade", "cassettes/v3-demo/results.json", "--run", "cassettes/v3-demo")),
    # --freeze / --unfreeze write the run's manifest and results: on a copy
    Case("grade-freeze", ("grade", f"{TMP}/v3", "--freeze"), setup=(Copy("proj/cassettes/v3-demo", "tmp/v3"),),
         files=("tmp/v3/run.json", "tmp/v3/results.json")),
    Case("grade-unfreeze", ("grade", "cassettes/v2-demo", "--unfreeze"),
         files=("proj/cassettes/v2-demo/run.json", "proj/cassettes/v2-demo/results.json")),
])

# ---- diff: v2-demo vs v3-demo in every format; across page changes; the README's examples
for fmt in DIFF_FORMATS:
    if fmt == "html":
        add([Case("diff-v2-v3-html", ("diff", "cassettes/v2-demo", "cassettes/v3-demo", "--format", "html",
                                      "--out", "flips.html"), files=("proj/flips.html",))])
    else:
        add([Case(f"diff-v2-v3-{fmt}", ("diff", "cassettes/v2-demo", "cassettes/v3-demo", "--format", fmt))])
add([
    Case("diff-v2-v3-html-stdout", ("diff", "cassettes/v2-demo", "cassettes/v3-demo", "--format", "html")),
    Case("diff-v2-pages", ("diff", "cassettes/v2-demo", "cassettes/v2-demo-2026-09")),
    Case("diff-v2-pages-json", ("diff", "cassettes/v2-demo", "cassettes/v2-demo-2026-09", "--format", "json")),
    Case("diff-v3-pages", ("diff", "cassettes/v3-demo", "cassettes/v3-demo-2026-09")),
    Case("diff-v2-v3-pages-markdown", ("diff", "cassettes/v2-demo", "cassettes/v3-demo-2026-09", "--format", "markdown")),
    Case("diff-v2-v3-pages-no-discover", ("diff", "cassettes/v2-demo", "cassettes/v3-demo-2026-09", "--no-discover")),
    Case("diff-v2-v3-pages-with", ("diff", "cassettes/v2-demo", "cassettes/v3-demo-2026-09", "--no-discover",
                                   "--with", "cassettes/v2-demo-2026-09")),
    Case("diff-v2-v3-pages-confirm", ("diff", "cassettes/v2-demo", "cassettes/v3-demo-2026-09", "--confirm"),
         normalise=("today",)),
    # in the repository itself: its own cassettes/ are the bundled demo, so the suggested runs go to TMPDIR
    Case("repo-diff-v2-v3-pages-confirm", ("diff", "cassettes/v2-demo", "cassettes/v3-demo-2026-09", "--confirm"),
         cwd="repo", normalise=("today",)),
])
add(variants(Case("diff-v2-v3-pages", ("diff", "cassettes/v2-demo", "cassettes/v3-demo-2026-09")),
             warm=True, no_cache=True))

# ---- drift (README step 6), offline against a later run
add(variants(Case("drift-v3", ("drift", "cassettes/v3-demo", "--against", "cassettes/v3-demo-2026-09"),
                  normalise=("today",)), warm=True, no_cache=True))
add([
    Case("drift-v3-json", ("drift", "cassettes/v3-demo", "--against", "cassettes/v3-demo-2026-09", "--json"),
         normalise=("today",)),
    Case("drift-v2", ("drift", "cassettes/v2-demo", "--against", "cassettes/v2-demo-2026-09"), normalise=("today",)),
    Case("drift-nothing-at-risk", ("drift", "cassettes/v3-demo", "--against", "cassettes/v2-demo"),
         normalise=("today",)),
    Case("repo-drift-v3", ("drift", "cassettes/v3-demo", "--against", "cassettes/v3-demo-2026-09"), cwd="repo",
         normalise=("today",)),
    Case("repo-drift-v3-json", ("drift", "cassettes/v3-demo", "--against", "cassettes/v3-demo-2026-09", "--json"),
         cwd="repo", normalise=("today",)),
])

# ---- pages history / diff (the page store is filled from the cassettes on first use)
add(variants(Case("pages-history", ("pages", "history", README_URL)), warm=True, no_cache=True))
add([
    Case("pages-history-json", ("pages", "history", README_URL, "--json")),
    Case("pages-history-gone", ("pages", "history", GONE_URL)),
    Case("pages-diff", ("pages", "diff", README_URL)),
    Case("pages-diff-reversed", ("pages", "diff", README_URL, "--from", "d318b43223e3", "--to", "122ac3076e0b")),
    Case("pages-diff-gone", ("pages", "diff", GONE_URL)),
])

# ---- cassettes list / verify / audit
WALK_V3 = Copy("proj/cassettes/v3-demo", "tmp/my-v3")
"""The README walk-through's /tmp/my-v3: byte-identical to cassettes/v3-demo but for run.json/results.json."""
add([
    Case("cassettes-list", ("cassettes", "list")),
    Case("cassettes-list-json", ("cassettes", "list", "--json")),
    Case("cassettes-list-tmp", ("cassettes", "list", TMP), setup=(WALK_V3, Copy("proj/cassettes/v2-demo", "tmp/v2"))),
    Case("cassettes-audit", ("cassettes", "audit", "cassettes/")),
    Case("cassettes-audit-finding", ("cassettes", "audit", f"{TMP}/leaky.yaml"), setup=(Write("tmp/leaky.yaml", (
        "interactions:\n"
        "- request:\n"
        "    body: '{\"q\": 1}'\n"
        "    headers:\n"
        "      x-api-key:\n"
        "      - sk-ant-api03-Zq8vN3kR7tY2wP5mX9bC4dF6gH1jK0lQ-AbCdEfGh\n"
        "    method: POST\n"
        "    uri: https://api.anthropic.com/v1/messages\n"
        "  response:\n"
        "    body:\n"
        "      string: '{\"ok\": true}'\n"
        "    headers: {}\n"
        "    status:\n"
        "      code: 200\n"
        "      message: OK\n"
        "version: 1\n"
    )),)),
])
add(variants(Case("cassettes-verify", ("cassettes", "verify", f"{TMP}/my-v3", "cassettes/v2-demo"), setup=(WALK_V3,)),
             warm=True, no_cache=True))
add([
    Case("cassettes-verify-damaged", ("cassettes", "verify", "../tmp/damaged", "cassettes/v2-demo"),
         setup=(Copy("proj/cassettes/v3-demo", "tmp/damaged"),
                DeleteLines("tmp/damaged/docs_quotas-and-limits.md.yaml", 211, 350))),
])

# ---- judge --mode replay (README step 2)
add([
    Case("judge-replay-walkthrough", ("judge", "--mode", "replay", "--run", f"{TMP}/my-v3", "--no-progress"),
         setup=(WALK_V3,)),
    Case("judge-replay-out", ("judge", "--mode", "replay", "--run", "cassettes/v3-demo", "--no-progress",
                              "--out", f"{TMP}/results.json"), files=("tmp/results.json",)),
    Case("judge-replay-damaged", ("judge", "--mode", "replay", "--run", f"{TMP}/damaged", "--no-progress"),
         setup=(Copy("proj/cassettes/v3-demo", "tmp/damaged"),
                DeleteLines("tmp/damaged/docs_quotas-and-limits.md.yaml", 211, 350))),
])
# progress lines come in the order the conversations finish: at the default --concurrency 4 that order
# varies from run to run (README, step 1), so the case with progress lines runs one conversation at a time
for run in ("v1-demo", "v2-demo-2026-09"):
    add([Case(f"judge-replay-{run}", ("judge", "--mode", "replay", "--run", f"cassettes/{run}", "--concurrency", "1"))])
add(variants(Case("judge-replay-progress", ("judge", "--mode", "replay", "--run", "cassettes/v3-demo",
                                            "--concurrency", "1")), warm=True, no_cache=True))

# ---- recording against the two local stand-ins
# The brief's small run: one claims file, a (dummy) key as a user would give, progress lines on, the
# wall clock as recording time (normalised: `recorded_at`).
add([Case("record-small", ("judge", "--mode", "record", "--prompt", "v3", "--claims", "demo/claims/evaluation.json",
                           "--run", f"{TMP}/run", "--learn-url", LEARN_URL, "--anthropic-base-url", MODEL_URL),
          env=_env(ANTHROPIC_API_KEY=DUMMY_KEY), stand_ins=StandIns(),
          files=("tmp/run/docs_evaluation.md.yaml", "tmp/run/run.json", "tmp/run/results.json", "tmp/run/prompt.md"),
          normalise=("recorded_at", "versions"))])
# README step 1, as written there (no key, every claims file, default concurrency), with SOURCE_DATE_EPOCH
# so that run.json / results.json need no normalising; its cassettes and prompt.md are byte-identical to
# cassettes/v3-demo's (README).
WALK_RECORD = ("judge", "--prompt", "v3", "--claims", "demo/claims", "--run", f"{TMP}/my-v3", "--mode", "record",
               "--no-progress", "--learn-url", LEARN_URL, "--anthropic-base-url", MODEL_URL)
CLAIMS_FILES = ("azure-openai-models", "evaluation", "provisioned-throughput", "quotas-and-limits",
                "regions-and-lifecycle")
add([Case("record-walkthrough", WALK_RECORD, env=_env(SOURCE_DATE_EPOCH=JUNE_15), stand_ins=StandIns(),
          files=(*(f"tmp/my-v3/docs_{c}.md.yaml" for c in CLAIMS_FILES), "tmp/my-v3/prompt.md", "tmp/my-v3/run.json",
                 "tmp/my-v3/results.json"),
          normalise=("versions",))])
# README step 3: the model stand-in with --cut-off docs/evaluation.md; the recording exits 1 and keeps the run
OUTAGE = StandIns(model_args=("--cut-off", "docs/evaluation.md"))
OUTAGE_RECORD = ("judge", "--prompt", "v3", "--claims", "demo/claims", "--run", f"{TMP}/v3-outage", "--mode", "record",
                 "--no-progress", "--learn-url", LEARN_URL, "--anthropic-base-url", MODEL_URL)
add([
    Case("record-outage", OUTAGE_RECORD, env=_env(SOURCE_DATE_EPOCH=JUNE_15), stand_ins=OUTAGE,
         files=("tmp/v3-outage/run.json", "tmp/v3-outage/results.json", "tmp/v3-outage/docs_evaluation.md.yaml"),
         normalise=("versions",)),
    Case("grade-outage-baseline", ("grade", f"{TMP}/v3-outage", "--baseline", "cassettes/v2-demo"),
         setup=(Cli(OUTAGE_RECORD, rc=1, env=_env(SOURCE_DATE_EPOCH=JUNE_15)),), stand_ins=OUTAGE),
])
# services that refuse or are down, before anything is spent
add([
    Case("err-record-retired-model", ("judge", "--mode", "record", "--prompt", "v3", "--claims",
                                      "demo/claims/evaluation.json", "--run", f"{TMP}/r", "--model", "claude-2.1",
                                      "--learn-url", LEARN_URL, "--anthropic-base-url", MODEL_URL),
         stand_ins=StandIns()),
    Case("err-record-frozen", ("judge", "--mode", "record", "--prompt", "v2", "--claims", "demo/claims", "--run",
                               "cassettes/v2-demo", "--learn-url", LEARN_URL, "--anthropic-base-url", MODEL_URL),
         stand_ins=StandIns()),
    Case("err-record-learn-down", ("judge", "--mode", "record", "--prompt", "v3", "--claims",
                                   "demo/claims/evaluation.json", "--run", f"{TMP}/r",
                                   "--learn-url", "http://127.0.0.1:1/api/mcp", "--anthropic-base-url", MODEL_URL),
         stand_ins=StandIns()),
])

# ---- bad input: exit 2 with one line
BAD = "tmp/bad-claims.json"
add([
    Case("err-claims-malformed", ("judge", "--mode", "record", "--prompt", "v3", "--claims", f"{TMP}/bad-claims.json",
                                  "--run", f"{TMP}/r"),
         setup=(Write(BAD, '{"file": "docs/x.md", "claims": [\n'),)),
    Case("err-claims-duplicate-key", ("judge", "--mode", "record", "--prompt", "v3", "--claims",
                                      f"{TMP}/bad-claims.json", "--run", f"{TMP}/r"),
         setup=(Write(BAD, '{"file": "docs/x.md", "claims": [{"id": "a", "id": "b"}]}\n'),)),
    Case("err-claims-shape", ("judge", "--mode", "record", "--prompt", "v3", "--claims", f"{TMP}/bad-claims.json",
                              "--run", f"{TMP}/r"),
         setup=(Write(BAD, '{"file": "docs/x.md"}\n'),)),
    Case("err-grade-claims-malformed", ("grade", "cassettes/v3-demo", "--claims", "../tmp/bad-claims.json"),
         setup=(Write(BAD, '{"file": "docs/x.md", "claims": [\n'),)),
    Case("err-gold-missing", ("grade", "cassettes/v3-demo", "--gold", f"{TMP}/no-such-gold.json")),
    Case("err-gold-malformed", ("grade", "cassettes/v3-demo", "--gold", "../tmp/gold.json"),
         setup=(Write("tmp/gold.json", '{"name": "g", "items": [{"file": 1}]}\n'),)),
    Case("err-unknown-flag-grade", ("grade", "cassettes/v3-demo", "--bogus")),
    Case("err-unknown-flag-bakeoff", ("bakeoff", "--bogus")),
    Case("err-schema-unknown", ("schema", "nope")),
    Case("err-judge-out-dash", ("judge", "--mode", "replay", "--run", "cassettes/v3-demo", "--out", "-")),
    Case("err-unknown-prompt", ("judge", "--prompt", "v9", "--claims", "demo/claims", "--run", f"{TMP}/r",
                                "--mode", "record")),
    Case("err-no-such-run", ("diff", "cassettes/v2-demo", "cassettes/nope")),
    Case("err-drift-no-mode", ("drift", "cassettes/v3-demo")),
    Case("err-pages-unknown-url", ("pages", "history", "https://learn.microsoft.com/nope")),
    # README "Commands": a setting judge-replay does not know stops every command
    Case("err-pyproject-unknown-setting", ("bakeoff",),
         setup=(Replace("proj/pyproject.toml", "[tool.judge-replay]\n",
                        '[tool.judge-replay]\nmodle = "claude-sonnet-5-5"\n'),)),
    Case("err-pyproject-bad-price", ("cassettes", "list"),
         setup=(Append("proj/pyproject.toml", '\n[tool.judge-replay.prices]\nclaude-sonnet-5-5 = {input = "two", output = 10}\n'),)),
])


def by_name() -> dict[str, Case]:
    cases: dict[str, Case] = {}
    for case in CASES:
        if case.name in cases:
            raise ValueError(f"two golden cases are named {case.name!r}")
        cases[case.name] = case
    return cases
