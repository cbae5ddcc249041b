import pytest

from secoverhead.errors import ConfigError
from secoverhead.servers.cpulimit import cpu_limiter


def test_no_limit_is_none():
    assert cpu_limiter(None) is None


@pytest.mark.parametrize("cores", [0, -1, 1000, "many"])
def test_bad_core_counts_are_rejected(cores):
    with pytest.raises(ConfigError):
        cpu_limiter(cores)


def test_affinity_rounds_up_to_whole_cores():
    lim = cpu_limiter(0.5, prefer="affinity")
    assert lim.method == "affinity" and lim.cores == 1.0 and len(lim.cpus) == 1
