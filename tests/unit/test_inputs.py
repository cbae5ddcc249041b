"""Bounded reading: parameters files and -p values that would exhaust memory or hang are refused in one line,
before they are read whole; errors never format an unbounded value."""

from __future__ import annotations

import os
import resource
import signal

import pytest

from secoverhead.app import cli
from secoverhead.core.errors import ConfigError
from secoverhead.core.files import Unreadable, read_bounded, read_json
from secoverhead.core.params import bounded_repr, read_file

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.fixture
def specials(tmp_path):
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    with (tmp_path / "big.yaml").open("wb") as f:
        f.truncate(5 << 30)  # sparse
    (tmp_path / "bomb.yaml").write_text(BOMB + "workloads: *i\n")
    (tmp_path / "deep.yaml").write_text("workloads: " + "[" * 100_000 + "]" * 100_000 + "\n")
    return tmp_path


@pytest.mark.parametrize(
    "name, why",
    [
        ("fifo.yaml", "not a file"),
        ("zero.yaml", "not a file"),
        ("big.yaml", "larger than"),
        ("bomb.yaml", "aliases"),
        ("deep.yaml", "nested deeper"),
    ],
)
def test_hostile_parameter_files_are_refused_without_being_read(specials, name, why):
    with pytest.raises(ConfigError, match=why):
        read_file(specials / name)


@pytest.mark.parametrize("name", ["fifo.yaml", "zero.yaml", "big.yaml", "bomb.yaml", "deep.yaml"])
def test_the_cli_answers_hostile_files_in_one_line_within_a_second_and_small_memory(specials, name, capsys):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    signal.alarm(5)  # a hang fails the test rather than the suite
    try:
        code = cli.main(["run", "tde", "-f", str(specials / name), "--reports", str(specials / "r")])
    finally:
        signal.alarm(0)
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and len(err) < 400
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB


def test_a_deep_or_long_p_value_is_one_line(capsys, tmp_path):
    for value in ("[" * 30_000 + "]" * 30_000, "x," * 40_000):
        code = cli.main(["run", "tde", "-p", "workloads", value, "--reports", str(tmp_path)])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and len(err) < 400


def test_errors_show_a_bounded_value():
    value = [[["x" * 10_000] * 1000] * 1000] * 1000  # shared references: a billion cells under repr()
    assert len(bounded_repr(value)) < 200
    assert len(bounded_repr("y" * 1_000_000)) < 100


def test_reading_from_a_reports_tree_is_bounded(tmp_path):
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    (tmp_path / "ok.json").write_text('{"a": 1}' + " " * 1000)
    for name in ("fifo.json", "zero.json"):
        with pytest.raises(Unreadable):
            read_bounded(tmp_path / name, 1 << 20)
        assert read_json(tmp_path / name) is None
    assert read_json(tmp_path / "ok.json") == {"a": 1}  # trailing white space (run.json's reserve) is JSON
    assert read_json(tmp_path / "ok.json", limit=100) is None


@pytest.mark.parametrize("special", ["fifo.yaml", "zero.yaml", "big.yaml"])
@pytest.mark.parametrize("param", ["mysql_password_file", "mysql_ca_file"])
def test_special_files_given_as_file_parameters_are_one_line(specials, special, param, capsys, monkeypatch):
    monkeypatch.setenv("SECOVERHEAD_FUZZ_PW", "Long-Unusual-Pw-123")
    source = ["-p", "mysql_password_env", "SECOVERHEAD_FUZZ_PW"] if param != "mysql_password_file" else []
    args = ["run", "tls", "-p", "mongo_enabled", "false", "-p", "mysql_host", "127.0.0.1", "-p", "mysql_user", "u"]
    args += [*source, "-p", param, str(specials / special), "--reports", str(specials / "r")]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    signal.alarm(5)
    try:
        code = cli.main(args)
    finally:
        signal.alarm(0)
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert param in err or ("CA certificate" in err and param == "mysql_ca_file"), err
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000


def test_a_copied_in_run_with_special_files_is_skipped_or_refused_in_one_line(tmp_path, capsys):
    run = tmp_path / "reports" / "tls" / "20260101T000000Z-h-x"
    (run / "results").mkdir(parents=True)
    os.mkfifo(run / "run.json")
    (run / "results" / "verdicts.json").symlink_to("/dev/zero")
    signal.alarm(10)
    try:
        assert cli.main(["index", "--reports", str(tmp_path / "reports")]) == 0
        assert "skipped" in (tmp_path / "reports" / "index.html").read_text()
        capsys.readouterr()
        assert cli.main(["run", "--resume", str(run), "--reports", str(tmp_path / "reports")]) == 2
    finally:
        signal.alarm(0)
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "run.json" in err, err


# -- read strictly: what would otherwise be taken silently --------------------------------------------------
def _refusal(capsys, *argv: str) -> str:
    code = cli.main(["run", *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    return err


def test_a_key_given_twice_in_a_parameters_file_is_refused(tmp_path, capsys):
    f = tmp_path / "twice.yaml"
    f.write_text("repetitions: 3\nseed: 1\nrepetitions: 5\n")
    assert "'repetitions' is given twice" in _refusal(capsys, "tls", "-f", str(f))
    f.write_text("external_arms:\n  a: {enable: [x]}\n  a: {enable: [y]}\n")  # a nested mapping too
    assert "'a' is given twice" in _refusal(capsys, "audit", "-f", str(f))


@pytest.mark.parametrize("value", ["3\u0663", "\u0663", "\uff13", "3\u00b2"])
def test_a_number_is_ascii_digits_only(value, capsys):
    assert "must be an integer" in _refusal(capsys, "tls", "-p", "seed", value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("mongo_uri", "mongodb://127.0.0.1:27017/\n"),
        ("mongo_uri", "mongodb://127.0.0.1:27017/\x1b[2J"),
        ("mysql_host", "db1.example\x7f"),
        ("mysql_database", "bench\x08"),
    ],
)
def test_a_control_byte_in_a_uri_host_or_name_is_refused(name, value, capsys):
    assert "control character" in _refusal(capsys, "tls", "-p", name, value)
