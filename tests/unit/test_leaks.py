"""The secret scanner: every spelling found, text rewritten, Parquet rewritten and still readable, other binary
files left whole and named, names on disk cleaned, and secrets it cannot scan for safely refused."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from secoverhead.host import leaks

SECRET = 'Pw with "quotes" & <tags>\\ 7'


def test_a_planted_secret_is_found_in_every_spelling_and_scrubbed(tmp_path):
    (tmp_path / "a.log").write_text(f"connected with password {SECRET}\n")
    (tmp_path / "b.json").write_text(json.dumps({"x": SECRET}))
    (tmp_path / "c.html").write_text("<td>Pw with &quot;quotes&quot; &amp; &lt;tags&gt;\\ 7</td>")
    (tmp_path / "d.txt").write_text(repr(SECRET))
    (tmp_path / "clean.txt").write_text("nothing here\n")
    found = leaks.scan(tmp_path, [SECRET])
    assert sorted(lk.path for lk in found) == ["a.log", "b.json", "c.html", "d.txt"]
    assert all(lk.fixed for lk in found)
    assert leaks.scan(tmp_path, [SECRET], fix=False) == []
    assert json.loads((tmp_path / "b.json").read_text()) == {"x": "<redacted>"}  # still valid JSON


def test_parquet_is_rewritten_through_its_writer_and_stays_readable(tmp_path):
    df = pd.DataFrame({"metric": ["a", f"x{SECRET}y"], "value": [1.0, 2.0], SECRET: [1, 2]})
    df.to_parquet(tmp_path / "results.parquet")
    (found,) = leaks.scan(tmp_path, [SECRET])
    assert found.fixed and found.path == "results.parquet"
    back = pd.read_parquet(tmp_path / "results.parquet")
    assert list(back["metric"]) == ["a", "x<redacted>y"] and list(back["value"]) == [1.0, 2.0]
    assert "<redacted>" in back.columns
    assert leaks.scan(tmp_path, [SECRET], fix=False) == []


def test_other_binary_files_are_left_whole_and_named(tmp_path):
    data = b"\x89PNG\0\0" + SECRET.encode() + b"\xff\xfe"
    (tmp_path / "plot.png").write_bytes(data)
    (found,) = leaks.scan(tmp_path, [SECRET])
    assert not found.fixed and "left as it is" in found.note
    assert (tmp_path / "plot.png").read_bytes() == data
    assert "NOT removed" in leaks.describe([found])


def test_a_secret_in_a_name_is_renamed_and_never_shown(tmp_path):
    secret = "Hunter2Secret"
    (tmp_path / f"run-{secret}" / "sub").mkdir(parents=True)
    (tmp_path / f"run-{secret}" / "sub" / f"{secret}.csv").write_text("1\n")
    found = leaks.scan(tmp_path, [secret])
    assert {lk.what for lk in found} == {"name"} and all(lk.fixed for lk in found)
    assert all(secret not in lk.path for lk in found) and secret not in leaks.describe(found)
    assert not [p for p in tmp_path.rglob("*") if secret in str(p)]
    assert (tmp_path / "run-<redacted>" / "sub" / "<redacted>.csv").read_text() == "1\n"


def test_special_files_are_not_read(tmp_path):
    import os

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "zero").symlink_to("/dev/zero")
    assert leaks.scan(tmp_path, ["Hunter2Secret"]) == []  # returns at once: neither is opened


@pytest.mark.parametrize(
    "value, ordinary, why",
    [
        ("short", [], "shorter than"),
        ("sbtest", [], "shorter than"),
        ("sbtest12"[:6] + "xy", [], None),
        ("password", [], "appears in text"),
        ("Secoverhead", [], "appears in text"),
        ("Notebook-Word", ["import notebook-word as x"], "appears in text"),
        ("abc\0defgh", [], "NUL"),
        ("a long, unusual one", ["sbtest", "bench"], None),
    ],
)
def test_secrets_it_cannot_scan_for_safely_are_refused(value, ordinary, why):
    got = leaks.scan_problem(value, ordinary)
    assert (got is None) if why is None else (why in got)


def test_a_password_that_is_a_word_of_every_page_is_refused_at_the_start(monkeypatch):
    """'transparent' is in every report's stylesheet: found there at the end, it failed the run after measuring."""
    from secoverhead.app import pipeline
    from secoverhead.core.errors import ConfigError, SecoverheadError

    monkeypatch.setenv("STYLE_WORD_PW", "transparent")
    overrides = [("mysql_host", "127.0.0.1"), ("mysql_user", "u"), ("mysql_password_env", "STYLE_WORD_PW")]
    overrides.append(("mysql_port", "9"))  # nothing listens: a password that passes is stopped by the next check
    with pytest.raises(ConfigError, match="stylesheet"):
        pipeline.prepare("tls", overrides=overrides)
    monkeypatch.setenv("STYLE_WORD_PW", "Qx7-unusual-Passphrase-31")
    with pytest.raises(SecoverheadError) as caught:
        pipeline.prepare("tls", overrides=overrides)
    assert "stylesheet" not in str(caught.value)
