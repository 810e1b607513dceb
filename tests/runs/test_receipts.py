"""The verified-replay shortcut: a replay of unchanged inputs with unchanged code gives the full replay's
results and output byte for byte without running it; any change runs the full replay."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from replay.secrets import registry as _secrets
from replay.cassettes.cache import OFF_VARIABLE
from replay.cli.main import main
from replay.errors import InputError
from replay.runs.receipts import code_sha256, installed_distributions, receipt_for, receipts_folder
from replay.recording.recorder import recorders_created
from replay.analysis.verify import verify_run
from replay.judge.replaying import _run_claims, _run_prompt, replay_run
from replay.runs.folder import Run
from locations import REPO

RUN = "cassettes/v3-demo"


@pytest.fixture
def project(cached_project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project (pyproject.toml) as the working folder, holding the bundled v3 demo run and its claims."""
    tmp_path = cached_project
    shutil.copytree(REPO / RUN, tmp_path / RUN)
    shutil.copytree(REPO / "demo" / "claims", tmp_path / "demo" / "claims")
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def replayed(**options: object) -> tuple[str, bool]:
    """(the replay's results as JSON, whether it ran in full: through an HTTP recorder)."""
    with recorders_created() as recorders:
        results = replay_run(RUN, **options)  # type: ignore[arg-type]
    return results.model_dump_json(), bool(recorders)


def receipts(project: Path) -> list[Path]:
    """The receipts kept (in the test's own cache folder: the conftest's JUDGE_REPLAY_CACHE_DIR)."""
    folder = receipts_folder()
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def test_a_replay_of_unchanged_inputs_gives_the_full_replays_results_without_running(project: Path) -> None:
    full, ran = replayed()
    assert ran and len(receipts(project)) == 1
    again, ran_again = replayed()
    assert not ran_again
    assert again == full
    forced, ran_forced = replayed(use_receipt=False)
    assert ran_forced and forced == full


@pytest.mark.parametrize("change", ["cassette", "run.json", "results.json"])
def test_any_changed_input_replays_in_full(project: Path, change: str) -> None:
    replayed()
    run = project / RUN
    target = {"cassette": run / "docs_evaluation.md.yaml", "run.json": run / "run.json",
              "results.json": run / "results.json"}[change]
    target.write_bytes(target.read_bytes() + (b"# changed\n" if change == "cassette" else b"\n"))
    _, ran = replayed()
    assert ran
    _, ran_again = replayed()
    assert not ran_again  # the full replay wrote the receipt of the new inputs


def test_a_changed_claims_file_or_prompt_fails_as_the_full_replay_does(project: Path) -> None:
    replayed()
    claims = project / "demo" / "claims" / "evaluation.json"
    original = claims.read_bytes()
    claims.write_bytes(original + b"\n")
    with pytest.raises(InputError, match="changed since run"):
        replay_run(RUN)
    claims.write_bytes(original)
    prompt = project / RUN / "prompt.md"
    prompt.write_text(prompt.read_text("utf-8") + "\nOne more rule.\n", "utf-8")
    with pytest.raises(InputError, match="does not match prompt_sha256"):
        replay_run(RUN)


def test_claims_found_elsewhere_are_other_inputs(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    replayed()
    run = Run(RUN)
    here = receipt_for(run, _run_prompt(run), _run_claims(run))
    (project / "sub").mkdir()
    shutil.copytree(project / "demo", project / "sub" / "demo")
    monkeypatch.chdir(project / "sub")
    run = Run(project / RUN)
    there = receipt_for(run, _run_prompt(run), _run_claims(run))
    assert here is not None and there is not None
    assert here.inputs_sha256 != there.inputs_sha256


def test_other_code_is_another_receipt(project: Path) -> None:
    replayed()
    run = Run(RUN)
    prompt, batches = _run_prompt(run), _run_claims(run)
    same = receipt_for(run, prompt, batches)
    other = receipt_for(run, prompt, batches, code="another version of the code")
    assert same is not None and other is not None and same.path == other.path
    assert same.files() is not None
    assert other.files() is None


def test_the_code_fingerprint_covers_every_installed_distributions_version(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "anthropic-2.14.0.dist-info").mkdir()
    (tmp_path / "site" / "httpx-0.28.1.dist-info").mkdir()
    before = installed_distributions([str(tmp_path / "site")])
    (tmp_path / "site" / "anthropic-2.14.0.dist-info").rename(tmp_path / "site" / "anthropic-2.15.0.dist-info")
    assert installed_distributions([str(tmp_path / "site")]) != before
    assert "anthropic-2.15.0.dist-info" in installed_distributions([str(tmp_path / "site"), str(tmp_path / "none")])
    assert len(code_sha256()) == 64


def test_an_environment_variable_the_sdk_reads_is_an_input(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    replayed()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/elsewhere")
    _, ran = replayed()
    assert ran


def test_no_shortcut_with_the_cache_off_or_outside_the_project(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path_factory: pytest.TempPathFactory) -> None:
    replayed()
    monkeypatch.setenv(OFF_VARIABLE, "1")
    _, ran = replayed()
    assert ran
    monkeypatch.delenv(OFF_VARIABLE)
    outside = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(outside)
    (outside / "pyproject.toml").write_text("", "utf-8")
    shutil.copytree(project / "demo", outside / "demo")
    kept = [(p, p.read_bytes()) for p in receipts(project)]
    with recorders_created() as recorders:
        replay_run(project / RUN)
    assert recorders and [(p, p.read_bytes()) for p in receipts(outside)] == kept  # ran in full, kept no receipt


def test_a_receipt_carried_in_a_clone_is_never_read(project: Path, tmp_path_factory: pytest.TempPathFactory,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Receipts live in the user's cache folder, not the project: one a clone carries in the project's
    `.judge-replay/` (where they used to live, and a hostile contributor could plant one) answers nothing."""
    mine = tmp_path_factory.mktemp("user-cache")
    monkeypatch.setenv("JUDGE_REPLAY_CACHE_DIR", str(mine))
    full, ran = replayed()
    [receipt] = receipts(project)
    assert ran and receipt.is_relative_to(mine)
    carried = project / ".judge-replay" / "cache" / "replays"
    carried.mkdir(parents=True)
    shutil.copy(receipt, carried / receipt.name)
    monkeypatch.setenv("JUDGE_REPLAY_CACHE_DIR", str(tmp_path_factory.mktemp("a-fresh-machine")))
    again, ran_again = replayed()
    assert ran_again and again == full


def test_a_damaged_receipt_replays_in_full(project: Path) -> None:
    replayed()
    [receipt] = receipts(project)
    good = receipt.read_bytes()
    entry = json.loads(good)
    for damage in (b"", b"{not json", good[: len(good) // 2], json.dumps({**entry, "format": 0}).encode(),
                   json.dumps({**entry, "files": [{"file": "no results"}]}).encode(),
                   json.dumps({**entry, "files": base64.b64encode(b"not compressed").decode()}).encode(),
                   json.dumps({**entry, "files": base64.b64encode(zlib.compress(b'{"file": 1}')).decode()}).encode()):
        receipt.write_bytes(damage)
        _, ran = replayed()
        assert ran
        assert receipt.read_bytes() == good  # the full replay wrote it again


def test_no_shortcut_when_a_secret_the_user_gave_occurs_in_an_input(project: Path) -> None:
    text = (project / RUN / "docs_evaluation.md.yaml").read_text("utf-8")
    secret = next(word for word in text.split() if len(word) > 12 and word.isalnum())
    _secrets.remember(secret)
    _, ran = replayed()
    assert ran and receipts(project) == []
    _, ran_again = replayed()
    assert ran_again


def test_verify_always_replays_in_full_and_leaves_a_receipt(project: Path) -> None:
    replayed()
    with recorders_created() as recorders:
        report = verify_run(RUN)
    assert report.ok and report.interactions > 0 and recorders
    _, ran = replayed()
    assert not ran


def test_the_command_prints_and_writes_the_same_bytes_either_way(project: Path, capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def judge(out: str) -> tuple[int, str, str, bytes]:
        code = main(["judge", "--mode", "replay", "--run", RUN, "--concurrency", "1", "--out", "results.json"])
        printed = capsys.readouterr()
        return code, printed.out, printed.err, (project / "results.json").read_bytes()

    monkeypatch.setenv(OFF_VARIABLE, "1")
    full = judge("full")
    monkeypatch.delenv(OFF_VARIABLE)
    judge("writes the receipt")
    with recorders_created() as recorders:
        shortcut = judge("from the receipt")
    assert not recorders
    assert shortcut == full
    assert "[5/5]" in full[2]  # progress lines were compared too


def test_a_receipted_replay_never_imports_the_sdk(project: Path) -> None:
    """The shortcut skips the SDK entirely: not even imported (about 2 s of CPU at every replay)."""
    script = ("import sys\nfrom replay.cli.main import main\n"
              f"code = main(['judge', '--mode', 'replay', '--run', {RUN!r}, '--no-progress'])\n"
              "print('anthropic imported:', 'anthropic' in sys.modules, 'exit', code)\n")
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
            for _ in range(2)]
    assert runs[0].stdout.splitlines()[-1] == "anthropic imported: True exit 0"  # the full replay
    assert runs[1].stdout.splitlines()[-1] == "anthropic imported: False exit 0"  # from its receipt
    assert runs[0].stdout == runs[1].stdout.replace("False", "True") and runs[0].stderr == runs[1].stderr


def test_a_receipt_that_cannot_be_written_costs_only_the_shortcut(project: Path) -> None:
    receipts_folder().parent.mkdir(parents=True, exist_ok=True)
    receipts_folder().write_text("a file where the receipts folder goes", "utf-8")
    full, ran = replayed()
    again, ran_again = replayed()
    assert ran and ran_again and again == full


def test_inputs_hash_the_same_read_whole_or_in_pieces(project: Path) -> None:
    """With no secret known, run.json and results.json are hashed in pieces and each cassette by its
    stamp when it has one; with one known, every input is read whole to look for it: the same hash."""
    run = Run(RUN)
    prompt, batches = _run_prompt(run), _run_claims(run)
    pieces = receipt_for(run, prompt, batches)
    _secrets.remember("a-secret-that-occurs-in-no-input-0123456789")
    whole = receipt_for(run, prompt, batches)
    assert pieces is not None and whole is not None and pieces.inputs_sha256 == whole.inputs_sha256
    (project / RUN / "results.json").write_bytes((project / RUN / "results.json").read_bytes() + b" ")
    changed = receipt_for(run, prompt, batches)
    assert changed is not None and changed.inputs_sha256 != whole.inputs_sha256
