"""Attributing sampled stacks: named leaves, unnamed code credited to its nearest named caller in the same
library, unresolved samples counted, inlined frames, and matching a question's functions in folded stacks."""

from secoverhead.host import stacks

SCRIPT = """nginx  10 1.0:
\t  33ce8d [unknown] (/usr/lib/x86_64-linux-gnu/libcrypto.so.3)
\t  20d2d1 [unknown] (/usr/lib/x86_64-linux-gnu/libcrypto.so.3)
\t  1170d8 BN_mod_exp_mont_consttime (/usr/lib/x86_64-linux-gnu/libcrypto.so.3)
\t  8b2d7 ngx_ssl_handshake (/usr/sbin/nginx)

nginx  10 1.1:
\t  33ce8d [unknown] (/usr/lib/x86_64-linux-gnu/libssl.so.3)
\t  8b2d7 ngx_ssl_handshake (/usr/sbin/nginx)

nginx  10 1.2:
\t  e2bc memcpy_inline (inlined)
\t  e2bc __memcpy_avx (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t  8b2d7 start_thread (/usr/lib/x86_64-linux-gnu/libc.so.6)

nginx  10 1.3:
\tffffffff81415664 tcp_sendmsg ([kernel.kallsyms])
"""


def test_parse_gives_leaf_first_stacks_with_inlined_frames_in_their_callers_library():
    parsed = stacks.parse(SCRIPT)
    assert len(parsed) == 4
    assert parsed[0][2] == ("BN_mod_exp_mont_consttime", "libcrypto.so.3")
    assert parsed[2][0] == ("memcpy_inline", "libc.so.6")


def test_unnamed_leaf_goes_to_its_own_librarys_nearest_name_else_to_the_caller_that_entered_it():
    parsed = stacks.parse(SCRIPT)
    assert stacks.self_function(parsed[0]) == ("BN_mod_exp_mont_consttime*", True)
    # no name in libssl: credited to the named caller that entered it, marked as such
    assert stacks.self_function(parsed[1]) == ("ngx_ssl_handshake -> [libssl.so.3]", True)
    assert stacks.named_in_library(parsed[0]) and not stacks.named_in_library(parsed[1])
    assert stacks.self_function(parsed[2]) == ("memcpy_inline", True)
    assert stacks.self_function(parsed[3]) == ("tcp_sendmsg", True)


def test_summary_counts_samples_libraries_and_unresolved():
    s = stacks.summarize([*stacks.parse(SCRIPT), [("[unknown]", "libssl.so.3"), ("[unknown]", "nginx")]])
    assert s.samples == 5 and s.unresolved == 1 and s.unnamed_in_library == 2
    assert s.by_category == {"libcrypto (OpenSSL)": 1, "libssl (OpenSSL)": 2, "libc": 1, "kernel": 1}
    assert s.self_counts[("libcrypto (OpenSSL)", "BN_mod_exp_mont_consttime*")] == 1


def test_entry_points_never_name_a_sample():
    stack = [("[unknown]", "libc.so.6"), ("start_thread", "libc.so.6")]
    assert stacks.self_function(stack) == ("[libc.so.6]", False)


FOLDED = """nginx;ngx_ssl_handshake;EVP_DigestSignFinal;RSA_private_encrypt;[libcrypto.so.3] 30
nginx;ngx_ssl_handshake;EVP_PKEY_derive;[libcrypto.so.3] 10
nginx;ngx_http_process_request 5
nginx;golang.org/x/crypto/pbkdf2.Key;sha 2
"""


def test_folded_matching_counts_each_sample_once_by_name_or_prefix():
    assert stacks.folded_matching(FOLDED, ["RSA_private_encrypt", "EVP_DigestSignFinal"]) == 30
    assert stacks.folded_matching(FOLDED, ["EVP_PKEY_derive"]) == 10
    assert stacks.folded_matching(FOLDED, ["golang.org/x/crypto/pbkdf2.*"]) == 2
    assert stacks.folded_matching(FOLDED, ["nothing"]) == 0


def test_folded_inclusive_counts_a_function_once_per_sample_and_skips_library_placeholders():
    inc = stacks.folded_inclusive(FOLDED)
    assert inc["ngx_ssl_handshake"] == 40 and inc["nginx"] == 47
    assert "[libcrypto.so.3]" not in inc
