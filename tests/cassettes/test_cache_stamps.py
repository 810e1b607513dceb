"""Cassette stamps: the sha256 of a cassette's bytes is taken from its stamp only while the file's stat is
the stamped one and the file had been still for 2 s when it was read; anything else reads the bytes."""

from __future__ import annotations

import hashlib
import json
from replay.cassettes.entry_format import decode, encode
import os
import shutil
import time
import zlib
from pathlib import Path

import pytest

from factories import fetch_interaction
from replay.cassettes.cassette import load_cassette, save_cassette
from replay.cassettes.cache import cache_folder, OFF_VARIABLE, RACY_NS, STAMP_FORMAT, Cassette, entry_path
from replay.runs.receipts import receipt_for
from replay.judge.replaying import _run_claims, _run_prompt
from replay.runs.folder import Run
from locations import REPO



def _cassette(project: Path, text: str = "first") -> Path:
    path = project / "runs" / "r" / "docs_a.md.yaml"
    save_cassette(path, [fetch_interaction("https://learn.microsoft.com/a", text)])
    return path


def _stamp(cassette: Path) -> Path:
    entry = entry_path(cassette)
    assert entry is not None
    return entry.with_name(entry.name.removesuffix(".bin") + ".stamp")


def _write_stamp(cassette: Path, sha256: str, *, still_for_ns: int = RACY_NS) -> None:
    """The stamp a read of the cassette `still_for_ns` after its last change would have left (what a
    test cannot wait for), saying its bytes hash to `sha256`."""
    st = os.stat(cassette)
    stat = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    _stamp(cassette).parent.mkdir(parents=True, exist_ok=True)
    _stamp(cassette).write_text(json.dumps({"format": STAMP_FORMAT, "stat": stat, "read_at_ns": st.st_ctime_ns + still_for_ns,
                                            "sha256": sha256}), "utf-8")


def _entry_saying(cassette: Path, sha256: str, status: int) -> None:
    """Make the cassette's document entry say, for bytes hashing to `sha256`, that its answer has `status`."""
    entry = entry_path(cassette)
    assert entry is not None
    line = json.loads(entry.read_bytes().partition(b"\n")[0])
    doc = decode(entry.read_bytes().partition(b"\n")[2])
    doc["interactions"][0]["response"]["status"]["code"] = status
    payload = encode(doc)
    line.update(source_sha256=sha256, payload_length=len(payload), payload_crc32=zlib.crc32(payload))
    entry.write_bytes(json.dumps(line).encode() + b"\n" + payload)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_trusted_stamp_stands_for_the_bytes(project: Path) -> None:
    cassette = _cassette(project)
    assert load_cassette(cassette)[0].status == 200
    assert not _stamp(cassette).exists()  # just written: racily clean, no stamp
    _entry_saying(cassette, "0" * 64, 299)
    _write_stamp(cassette, "0" * 64)
    assert load_cassette(cassette)[0].status == 299  # the bytes were not hashed: the stamp was believed
    assert Cassette(cassette).sha256() == "0" * 64


@pytest.mark.parametrize("case", ["racily clean", "other size", "other inode", "damaged", "cache off"])
def test_a_stamp_that_cannot_be_trusted_is_not_believed(project: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    cassette = _cassette(project)
    load_cassette(cassette)
    _entry_saying(cassette, "0" * 64, 299)
    _write_stamp(cassette, "0" * 64, still_for_ns=RACY_NS - 1 if case == "racily clean" else RACY_NS)
    if case == "other size":
        with cassette.open("ab") as fh:
            fh.write(b"\n")
    elif case == "other inode":
        shutil.copy(cassette, cassette.with_suffix(".tmp"))
        cassette.with_suffix(".tmp").replace(cassette)
    elif case == "damaged":
        _stamp(cassette).write_bytes(_stamp(cassette).read_bytes()[:-2])
    elif case == "cache off":
        monkeypatch.setenv(OFF_VARIABLE, "1")
    assert load_cassette(cassette)[0].status == 200
    assert Cassette(cassette).sha256() == _sha256(cassette)


def test_an_edit_in_place_that_keeps_size_and_mtime_is_still_seen(project: Path) -> None:
    """`touch -d` can restore the mtime after an edit of the same size; nothing can restore the ctime."""
    cassette = _cassette(project, "first")
    assert load_cassette(cassette)[0].status == 200
    _write_stamp(cassette, _sha256(cassette))
    assert Cassette(cassette).sha256() == _sha256(cassette)
    before = os.stat(cassette)
    with cassette.open("r+b") as fh:  # the same inode, the same size
        data = fh.read()
        fh.seek(0)
        fh.write(data.replace(b"first", b"fir5t"))
    while True:  # restore the mtime; the kernel moves the ctime (once its coarse clock has ticked)
        os.utime(cassette, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = os.stat(cassette)
        if after.st_ctime_ns != before.st_ctime_ns:
            break
        time.sleep(0.001)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    assert "fir5t" in load_cassette(cassette)[0].response_body
    assert Cassette(cassette).sha256() == _sha256(cassette)


def test_a_cassette_still_for_2_s_gets_a_stamp_that_later_reads_trust(project: Path) -> None:
    cassette = _cassette(project)
    time.sleep(RACY_NS / 1e9 + 0.1)  # the one real wait: a stamp is only written for a file this still
    assert load_cassette(cassette)[0].status == 200
    found = json.loads(_stamp(cassette).read_bytes())
    assert found["sha256"] == _sha256(cassette) and found["stat"][2] == cassette.stat().st_size
    assert sorted(p.suffix for p in cache_folder().iterdir()) == [".bin", ".stamp"]
    _entry_saying(cassette, found["sha256"], 299)
    assert load_cassette(cassette)[0].status == 299  # read from the entry, by the stamped hash


def test_receipts_take_a_cassettes_hash_from_its_trusted_stamp(project: Path) -> None:
    shutil.copytree(REPO / "cassettes" / "v3-demo", project / "cassettes" / "v3-demo")
    shutil.copytree(REPO / "demo" / "claims", project / "demo" / "claims")
    run = Run(project / "cassettes" / "v3-demo")
    prompt, batches = _run_prompt(run), _run_claims(run)
    receipt = receipt_for(run, prompt, batches)
    assert receipt is not None
    cassette = run.path / run.manifest.claims[0].cassette
    _write_stamp(cassette, _sha256(cassette))
    same = receipt_for(run, prompt, batches)
    _write_stamp(cassette, "0" * 64)
    other = receipt_for(run, prompt, batches)
    assert same is not None and other is not None
    assert same.inputs_sha256 == receipt.inputs_sha256 != other.inputs_sha256


def test_verify_believes_no_stamp(project: Path) -> None:
    """`cassettes verify` is the check stamps rest on: a cassette edited where its stamp cannot see (what a
    write through a memory map leaves: the stat unchanged) still fools a replay's cache, not verify."""
    from replay.cassettes.cache import every_byte_hashed
    from replay.analysis.verify import verify_run

    shutil.copytree(REPO / "cassettes" / "v3-demo", project / "cassettes" / "v3-demo")
    shutil.copytree(REPO / "demo" / "claims", project / "demo" / "claims")
    run_dir = project / "cassettes" / "v3-demo"
    assert verify_run(run_dir).ok  # entries made for the cassettes as recorded
    cassette = run_dir / Run(run_dir).manifest.claims[0].cassette
    recorded = _sha256(cassette)
    text = cassette.read_text("utf-8")
    edited = text.replace("Azure", "Azura", 1)  # a page's text: the model requests that quote it change
    assert edited != text and len(edited) == len(text)
    cassette.write_text(edited, "utf-8")
    _write_stamp(cassette, recorded)  # the stamp a blind spot would have left: the old hash
    assert Cassette(cassette).sha256() == recorded  # believed outside verify
    with every_byte_hashed():
        assert Cassette(cassette).sha256() == _sha256(cassette) != recorded
    report = verify_run(run_dir)
    assert not report.ok


def test_a_cassette_rewritten_during_its_replay_is_not_read_against_the_old_index(project: Path) -> None:
    """A replay reads a cassette's full interactions only when it needs them (a miss message, verify's
    report): if the file was rewritten since its index was read, that is said, not mixed."""
    from replay.errors import InputError
    from replay.recording.tape import _Tape

    cassette = _cassette(project, "first")
    _Tape("docs/a.md", cassette).load()  # its index entry
    _write_stamp(cassette, _sha256(cassette))
    tape = _Tape("docs/a.md", cassette)
    tape.load()  # the index found by the stamp: the bytes not read
    save_cassette(cassette, [fetch_interaction("https://learn.microsoft.com/a", "second, longer")])
    entry = entry_path(cassette)
    assert entry is not None
    entry.unlink(missing_ok=True)  # no parsed copy of the old bytes left to read them from
    with pytest.raises(InputError, match="changed while it was being replayed"):
        tape.recorded
    unchanged = _Tape("docs/a.md", cassette)
    unchanged.load()
    assert unchanged.recorded[0].response_body == load_cassette(cassette)[0].response_body
