"""Every table, suggestion, text, HTML, payload and explorer tab of the fixed reports is what it
was when tests/data/golden/digests.json was written: a change of structure keeps behaviour byte
for byte. On a failure, ``python tests/golden.py --dump DIR`` at both versions shows the change."""
from __future__ import annotations

import json
import sys

import pytest
from golden import DIGESTS, REPO, artefacts, digest, subjects

sys.path.insert(0, str(REPO / "bench"))  # the ranks are written by bench/many_ranks.py

EXPECTED: dict[str, str] = json.loads(DIGESTS.read_text())
SUBJECTS = dict(subjects())


def test_the_digests_hold_exactly_the_subjects():
    """No subject lacks digests, and no digest belongs to a subject the dump no longer makes."""
    assert not [key for key in EXPECTED if not any(key.startswith(f"{name}/") for name in SUBJECTS)]
    assert not [name for name in SUBJECTS if not any(key.startswith(f"{name}/") for key in EXPECTED)]


@pytest.mark.parametrize("name", sorted(SUBJECTS))
def test_artefacts_are_unchanged(name):
    made = {f"{name}/{artefact}": digest(text) for artefact, text in artefacts(SUBJECTS[name]).items()}
    expected = {key: value for key, value in EXPECTED.items() if key.startswith(f"{name}/")}
    changed = sorted(key for key in made.keys() & expected.keys() if made[key] != expected[key])
    assert (changed, sorted(made.keys() - expected.keys()), sorted(expected.keys() - made.keys())) == ([], [], [])
