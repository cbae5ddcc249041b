"""Counting what a server asks of the kernel's random source from strace's output (-y names each descriptor)."""

from __future__ import annotations

from secoverhead.host.syscalls import RandomSourceUse, count

MONGOD_42 = [  # strace -f -y of mongod 4.2.6 during one SCRAM login (bytes elided)
    '6688  openat(AT_FDCWD</tmp/x>, "/dev/urandom", O_RDONLY) = 52</dev/urandom>',
    '6688  read(52</dev/urandom>, "`\\21\\304"..., 8191) = 8191',
    '6688  read(49<TCPv6:[::1]:27017->[::1]:5>, "\\3\\1\\0\\0"..., 16) = 16',
    '6688  openat(AT_FDCWD</tmp/x>, "/etc/hosts", O_RDONLY) = 53</etc/hosts>',
]
MONGOD_60 = ['7212  read(3</dev/urandom>, "\\216\\316h"..., 4096) = 4096']
OTHERS = [
    '9  getrandom("\\x1a\\x2b"..., 32, 0) = 32',
    '9  openat(AT_FDCWD, "/dev/random", O_RDONLY) = -1 ENOENT (No such file or directory)',
    '9  read(4</dev/random>, "\\1"..., 16) = 16',
    '9  read(5</tmp/dev/urandom.txt>, "x", 1) = 1',
]


def test_an_open_and_a_read_of_urandom_per_login_and_no_socket_read():
    assert count(MONGOD_42) == RandomSourceUse(opens=1, reads=1, getrandom=0, bytes=8191)


def test_a_kept_descriptor_is_a_read_without_an_open():
    assert count(MONGOD_60 * 3) == RandomSourceUse(opens=0, reads=3, getrandom=0, bytes=3 * 4096)


def test_getrandom_and_dev_random_count_a_failed_open_and_a_lookalike_file_do_not():
    assert count(OTHERS) == RandomSourceUse(opens=0, reads=1, getrandom=1, bytes=48)


def test_per_operation():
    use = RandomSourceUse(opens=40, reads=40, getrandom=0, bytes=40 * 8191)
    assert use.per(40) == {
        "opens_per_op": 1.0, "reads_per_op": 1.0, "getrandom_per_op": 0.0, "bytes_per_op": 8191.0,
        "random_calls_per_op": 1.0,
    }  # fmt: skip


def test_a_call_interrupted_by_another_thread_counts_once_with_the_bytes_it_resumed_with():
    lines = [
        "6700  read(52</dev/urandom>,  <unfinished ...>",
        '6701  read(49<TCPv6:[::1]:27017->[::1]:5>, "x", 16) = 16',
        '6700  <... read resumed>"\\1\\2"..., 8191) = 8191',
        "6702  getrandom( <unfinished ...>",
        '6702  <... getrandom resumed>"\\x1a"..., 32, 0) = 32',
        '6701  <... read resumed>"y", 16) = 16',  # a socket read's resumption: not the random source
    ]
    assert count(lines) == RandomSourceUse(opens=0, reads=1, getrandom=1, bytes=8191 + 32)
