"""docs/glossary.md gives each word one meaning: no word of it names two things among the library's public names
(a class or function defined in two places, unless each study declares its own of the same kind, as every study
declares its Arm), and every CLI flag spelled as a glossary word is the one its entry names (a deprecated one said
so there)."""

from __future__ import annotations

import argparse
import ast
import re

from secoverhead.app.cli import parser
from secoverhead.core import paths

LIB = paths.ROOT / "lib" / "secoverhead"
GLOSSARY = paths.ROOT / "docs" / "glossary.md"


def entries() -> dict[str, str]:
    """word -> its entry's text."""
    text = GLOSSARY.read_text(encoding="utf-8")
    found = re.findall(r"^- \*\*([^*]+)\*\*: (.*?)(?=^- \*\*|\Z)", text, re.M | re.S)
    return {word: body for word, body in found}


def public_definitions() -> list[tuple[str, str, str]]:
    """(name, module, kind) of every module-level public class and function of the library."""
    out = []
    for f in LIB.rglob("*.py"):
        module = ".".join(f.relative_to(LIB.parent).with_suffix("").parts)
        for node in ast.parse(f.read_text()).body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef) and not node.name.startswith("_"):
                out.append((node.name, module, "class" if isinstance(node, ast.ClassDef) else "function"))
    return out


# A word that is also the protocol's verb: a function named by it is the action ("run a study": each study's
# run(p), the CLI command that runs them, the calculator and the fleet), not a second thing the word names.
VERBS = {"run"}


def two_meanings(words: list[str], defs: list[tuple[str, str, str]]) -> dict[str, list[str]]:
    out = {}
    for word in words:
        ident = re.sub(r"\W", "", word)
        hits = [(m, kind) for name, m, kind in defs if name in (ident.lower(), ident.capitalize(), ident.upper())]
        hits = [(m, kind) for m, kind in hits if not (kind == "function" and word in VERBS)]
        per_study = all(kind == "class" and m.startswith("secoverhead.studies.") for m, kind in hits)
        studies = {m.split(".")[2] for m, _ in hits} if per_study else set()
        if len({m for m, _ in hits}) > 1 and not (per_study and len(studies) == len(hits)):
            out[word] = [f"{kind} in {m}" for m, kind in hits]
    return out


def flags() -> list[tuple[str, bool]]:
    """(flag, deprecated or hidden) of every sub-command."""
    out = []
    for action in parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                for a in sub._actions:
                    out += [(o, a.help == argparse.SUPPRESS) for o in a.option_strings if o.startswith("--")]
    return out


def test_the_glossary_defines_the_words_the_project_uses():
    words = entries()
    for word in ("study", "part", "arm", "baseline", "cell", "factor", "round", "block", "duet", "look", "reading",
                 "precondition", "claim", "verdict", "scale", "instance", "target"):  # fmt: skip
        assert word in words, f"docs/glossary.md does not define {word!r}"


def test_no_word_of_the_glossary_names_two_things_in_the_code():
    assert not (found := two_meanings(list(entries()), public_definitions())), found


def test_every_flag_named_after_a_glossary_word_is_the_one_its_entry_names():
    words = entries()
    for flag, hidden in flags():
        word = flag.removeprefix("--")
        deprecated_of = [w for w, body in words.items() if f"`{flag}` is its deprecated name" in body]
        if hidden and deprecated_of:  # an old name, read for a release: the entry it belongs to says so
            assert word not in words or "never a" in words[word], f"{flag}: its word's entry must rule it out"
            continue
        if word in words:
            assert f"`{flag}" in words[word] or f"{flag} " in words[word], f"{flag}: the glossary's {word!r} entry"
    assert "`--profile` is its deprecated name" in words["scale"]  # the old name of the scale, said so


def test_the_checks_can_fail():
    defs = [("Target", "secoverhead.fleet.spec", "class"), ("Target", "secoverhead.studies.tde.instances", "class")]
    assert two_meanings(["target"], defs) == {
        "target": ["class in secoverhead.fleet.spec", "class in secoverhead.studies.tde.instances"]
    }
    per_study = [
        ("Arm", "secoverhead.studies.tls.declarations", "class"),
        ("Arm", "secoverhead.studies.auth.declarations", "class"),
    ]
    assert two_meanings(["arm"], per_study) == {}
