"""In a notebook, a bad parameter is one line naming what to change (as on the CLI), and the cell still fails."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell


def test_a_bad_parameter_in_a_notebook_is_one_line_and_fails_the_cell(capsys):
    shell = InteractiveShell.instance()
    try:
        result = shell.run_cell(
            'from secoverhead import studies\ntls = studies.load("tls")\ntls.params({"repetitions": 0})'
        )
        assert not result.success  # a scheduled run stops on it
        err = capsys.readouterr()
        text = err.err + err.out
        assert "Error: parameter 'repetitions' must be between 1 and 1000, got 0" in text  # its class, its reason
        assert "Traceback" not in text and "File " not in text
    finally:
        shell.set_custom_exc((), None)
        InteractiveShell.clear_instance()
