"""The JupyterLab extension's "Profile cell with options…" writes only the flags that differ from
its ``DEFAULT_OPTIONS``: each of those must be what the magic does with no flag, or a choice left
at its default in the dialog would profile with another value. Read from the TypeScript source,
so no browser is needed."""
from __future__ import annotations

import json
import re

from conftest import ROOT

from nbprofiler.notebook.magic import TorchProfileMagics
from nbprofiler.options import DEVICE_CHOICES

OPTIONS_TS = (ROOT / "labextension" / "src" / "options.ts").read_text(encoding="utf-8")


def _constant(name: str) -> str:
    """The text of the TypeScript constant ``name``'s value, up to its closing ``;``."""
    found = re.search(rf"^(?:export )?const {name}\b[^=]*=\s*(.*?);\n", OPTIONS_TS, re.S | re.M)
    assert found is not None, f"{name} is not in labextension/src/options.ts"
    return found.group(1)


def _extension_defaults() -> dict[str, object]:
    body = re.fullmatch(r"Object\.freeze\(\{(.*)\}\)", _constant("DEFAULT_OPTIONS"), re.S)
    assert body is not None
    entries = re.findall(r"(\w+):\s*('[^']*'|[\w.]+)", body.group(1))
    return {key: json.loads(value.replace("'", '"')) for key, value in entries}


def test_the_extensions_defaults_are_the_magics():
    extension = _extension_defaults()
    magic = vars(TorchProfileMagics.torchprofile.parser.parse_args([]))
    # The extension writes '' for "no variable" and "no file", where the magic has None.
    assert {key: value if value != "" else None for key, value in extension.items()} == {
        key: magic[key] for key in extension}
    assert len(extension) == 10  # every option of the dialog was read


def test_the_extensions_devices_are_the_magics():
    assert json.loads(_constant("DEVICES").replace("'", '"')) == list(DEVICE_CHOICES)
