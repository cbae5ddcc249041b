import pytest

from secoverhead.errors import ConfigError
from secoverhead.secrets import Secret, known_secrets, redact, secret_from


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
