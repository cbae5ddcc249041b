import os

import pytest

from secoverhead.core.errors import ConfigError
from secoverhead.core.secrets import Secret, known_secrets, redact, secret_from


def test_secret_never_shows_itself():
    s = Secret("hunter2-sentinel", source="test")
    assert "hunter2" not in repr(s) and "hunter2" not in str(s) and "hunter2" not in f"{s}"
    assert s.reveal() == "hunter2-sentinel"


def test_redact_replaces_every_known_secret():
    Secret("pw-one-xyz")
    Secret("pw-two-abc")
    assert redact("a pw-one-xyz b pw-two-abc c") == "a <redacted> b <redacted> c"
    assert "pw-one-xyz" in known_secrets()


def test_secret_from_env_and_file(monkeypatch, tmp_path):
    monkeypatch.setenv("SECOVERHEAD_TEST_PW", "from-env")
    assert secret_from(env="SECOVERHEAD_TEST_PW").reveal() == "from-env"
    f = tmp_path / "pw"
    f.write_text("from-file\n")
    assert secret_from(file=f).reveal() == "from-file"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"env": "SECOVERHEAD_NO_SUCH_VAR"}, "is not set"),
        ({"file": "/nonexistent/pw"}, "does not exist"),
        ({}, "exactly one"),
        ({"env": "A", "file": "B"}, "exactly one"),
    ],
)
def test_secret_from_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        secret_from(**kwargs)


def test_empty_secret_is_rejected():
    with pytest.raises(ConfigError, match="empty"):
        Secret("")


def test_very_short_secrets_are_not_tracked_so_text_survives():
    Secret("x")
    assert redact("latency_max") == "latency_max"


@pytest.mark.parametrize("value", [" lead and trail ", "tab\there", "quote'\"#=$\\ç", "two\nlines"])
def test_secrets_are_taken_byte_for_byte(value, monkeypatch, tmp_path):
    monkeypatch.setenv("SECOVERHEAD_TEST_PW", value)
    assert secret_from(env="SECOVERHEAD_TEST_PW").reveal() == value
    f = tmp_path / "pw"
    first = value.split("\n")[0]
    for ending in ("\n", "\r\n", ""):
        f.write_bytes((first + ending + ("second line\n" if ending else "")).encode())
        assert secret_from(file=f).reveal() == first


def test_special_or_huge_secret_files_are_refused_unread(tmp_path):
    import os

    os.mkfifo(tmp_path / "fifo")  # reading would block for ever
    (tmp_path / "zero").symlink_to("/dev/zero")  # reading would never end
    big = tmp_path / "big"
    with big.open("wb") as f:
        f.truncate(5 << 30)  # sparse: 5 GB that costs no disk
    for name, why in (("fifo", "not a file"), ("zero", "not a file"), ("big", "larger than")):
        with pytest.raises(ConfigError, match=why) as err:
            secret_from(file=tmp_path / name)
        assert name not in str(err.value)  # what was named is not repeated


def test_a_password_typed_where_its_name_belongs_is_not_echoed():
    with pytest.raises(ConfigError) as err:
        secret_from(env="Hunter2Secret")
    assert "Hunter2Secret" not in str(err.value)


def test_the_platform_modules_uname_child_never_gets_an_exported_secret(monkeypatch):
    """platform.processor() runs `uname -p` with the whole environment the first time anything reads it; the CLI
    and the kernel learn it first, scrubbed, and later readers (platform.platform()) start nothing."""
    import platform
    import subprocess

    from secoverhead.core.environ import settle_platform

    calls = []
    real = subprocess.check_output

    def watched(args, **kw):
        calls.append((list(args), "SECOVERHEAD_TEST_PW" in os.environ))
        return real(args, **kw)

    monkeypatch.setenv("SECOVERHEAD_TEST_PW", "Platform-Sentinel-5521")
    monkeypatch.setattr(platform, "_uname_cache", None)
    monkeypatch.setattr(subprocess, "check_output", watched)
    settle_platform()
    platform.platform()
    platform.processor()
    assert calls == [(["uname", "-p"], False)]  # once, without the secret
    assert os.environ["SECOVERHEAD_TEST_PW"] == "Platform-Sentinel-5521"  # ours is as it was
