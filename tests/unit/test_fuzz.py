"""Property-based fuzzing of parameters and parameter files: whatever a user types, the CLI either accepts it
or exits 2 with one line; it never shows a traceback and leaves nothing behind.

Accepted inputs stop short of running (run_study is replaced), and connections to anything but loopback are
refused before they leave the machine, so named servers are only ever tried on 127.0.0.1."""

from __future__ import annotations

import os
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from secoverhead.app import cli, pipeline
from secoverhead.core.params import specs
from secoverhead.studies import STUDIES

EXAMPLES = 300  # two tests: 600 generated inputs

_real_connect = socket.create_connection


def _loopback_only(address, *args, **kwargs):
    host = str(address[0])
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise OSError("the fuzz tests connect only to loopback")
    return _real_connect(address, *args, **kwargs)


@pytest.fixture(autouse=True)
def contained(monkeypatch, tmp_path_factory):
    monkeypatch.setattr(socket, "create_connection", _loopback_only)
    monkeypatch.setattr(
        pipeline,
        "run_study",
        lambda prepared, **kw: pipeline.RunOutcome(prepared.study.id, tmp_path_factory.mktemp("r"), "ok"),
    )
    monkeypatch.setattr("secoverhead.suite.index.build_index", lambda root: root)


NAMES = [
    *sorted({n for s in STUDIES.values() for n in specs(s.Params)}),
    "nosuch",
    "mysql_password",
    "api_key",
    "output_dir",
    "",
    "../x",
    "repetitions ",
]
TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            "0",
            "-1",
            "1e309",
            "nan",
            "inf",
            "true",
            "on",
            "null",
            "~",
            "[]",
            "{}",
            "[1, 1]",
            "[0]",
            "1,2,x",
            "!!python/object/apply:os.system ['true']",
            "{a: [",
            "'",
            '"',
            "\x00",
            "9" * 40,
            "127.0.0.1",
            "mongodb://u:p@127.0.0.1:1/",
            "mongodb://[::1/",
            "mongodb://127.0.0.1:99999/",
            "http://x/",
            "a" * 300,
            "ü" * 10,
            "-" * 3,
            "/etc/passwd",
            "/nonexistent/file",
        ]
    ),
    st.integers(min_value=-(10**12), max_value=10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


def _check(code: int, err: str, reports) -> None:
    assert code in (0, 2), (code, err)
    if code == 2:
        assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert not reports.exists() or not any(p for p in reports.rglob("*") if p.is_dir() and p.parent != reports), (
        "left behind"
    )


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(study=st.sampled_from([*STUDIES, "nosuch"]), pairs=st.lists(st.tuples(st.sampled_from(NAMES), TEXT), max_size=3))
def test_fuzzed_p_values_are_accepted_or_one_line_exit_2(study, pairs, tmp_path, capsys):
    args = ["run", study] + [x for name, value in pairs for x in ("-p", name, value)]
    reports = tmp_path / "reports"
    code = cli.main([*args, "--reports", str(reports)])
    _check(code, capsys.readouterr().err, reports)


YAML = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=200).map(str.encode),
    st.dictionaries(st.sampled_from(NAMES), TEXT, max_size=4).map(
        lambda d: "\n".join(f"{k}: {v}" for k, v in d.items()).encode(errors="replace")
    ),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(study=st.sampled_from(list(STUDIES)), content=YAML)
def test_fuzzed_parameter_files_are_accepted_or_one_line_exit_2(study, content, tmp_path, capsys):
    f = tmp_path / "params.yaml"
    f.write_bytes(content)
    reports = tmp_path / "reports"
    code = cli.main(["run", study, "-f", str(f), "--reports", str(reports)])
    _check(code, capsys.readouterr().err, reports)


def test_a_reports_path_that_is_a_file_or_read_only_is_one_line(tmp_path, capsys):
    f = tmp_path / "afile"
    f.write_text("x")
    assert cli.main(["run", "tls", "--reports", str(f)]) == 2
    assert "is a file" in capsys.readouterr().err
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):  # root writes anywhere: make it a file that cannot hold a directory
            pytest.skip("running as root: permission bits do not stop writes")
        assert cli.main(["run", "tls", "--reports", str(ro / "sub")]) == 2
        assert "cannot be created" in capsys.readouterr().err or "not writable" in capsys.readouterr().err
    finally:
        ro.chmod(0o700)


FILE_PARAMS = sorted({(sid, n) for sid, s in STUDIES.items() for n in specs(s.Params) if n.endswith("_file")})
AWKWARD_PATHS = ["a" * 300, "/tmp/" + "b" * 5000, "x\x00y", "/", "/nonexistent/ca.pem", "~nosuchuser/x"]


@pytest.mark.parametrize("study,name", FILE_PARAMS)
@pytest.mark.parametrize("value", AWKWARD_PATHS, ids=["long-name", "long-path", "nul", "directory", "missing", "tilde"])
def test_every_file_parameter_says_why_a_path_is_unusable_in_one_line(study, name, value, tmp_path, capsys):
    # pathlib's is_file() raises ENAMETOOLONG instead of returning False (CI found it through the fuzzer)
    reports = tmp_path / "reports"
    code = cli.main(["run", study, "-p", name, value, "--reports", str(reports)])
    err = capsys.readouterr().err
    _check(code, err, reports)
    assert code == 2 and name in err


@pytest.mark.parametrize("value", AWKWARD_PATHS[:4])
def test_a_parameters_file_with_an_unusable_path_is_one_line(value, tmp_path, capsys):
    reports = tmp_path / "reports"
    code = cli.main(["run", "tls", "-f", value, "--reports", str(reports)])
    err = capsys.readouterr().err
    _check(code, err, reports)
    assert code == 2 and "parameters file" in err


@pytest.mark.parametrize("value", [*AWKWARD_PATHS[:3], "~nosuchuser/r"], ids=["long-name", "long-path", "nul", "tilde"])
@pytest.mark.parametrize("option", ["--reports", "--resume", "compare"])
def test_an_unusable_directory_path_is_one_line(option, value, tmp_path, capsys):
    if option == "compare":
        args = ["compare", value, str(tmp_path)]
    elif option == "--resume":
        args = ["run", "--resume", value, "--reports", str(tmp_path / "reports")]
    else:
        args = ["run", "tls", "--reports", value]
    code = cli.main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
