"""The names ``%%torchprofile``'s options take, checked before the cell runs: a variable of the
notebook (``-o VAR``, ``--compare VAR``) and the kind of a suggestion (``--tried KIND``).

A name is only ever shown as something to type (``-o NAME``) when it is one: other text
stays quoted, as what was given."""
from __future__ import annotations

import keyword

from ..advice.suggestion import SUGGESTION_KINDS
from ..errors import OptionError


def is_variable_name(text: str) -> bool:
    """Whether ``text`` can name a variable: an identifier, and not a keyword."""
    return text.isidentifier() and not keyword.iskeyword(text)


def check_output(variable: str | None) -> None:
    """``-o VAR``: an ``OptionError`` unless ``variable`` (when given) can name a variable."""
    if variable is not None and not is_variable_name(variable):
        raise OptionError("-o", f"{variable!r} is not a valid variable name")


def check_tried(kind: str | None) -> None:
    """``--tried KIND``: an ``OptionError``, listing the kinds, unless ``kind`` (when given) is a
    suggestion's kind."""
    if kind is not None and kind not in SUGGESTION_KINDS:
        raise OptionError("--tried", f"{kind!r} is not the kind of a suggestion; the kinds are "
                                     f"{', '.join(SUGGESTION_KINDS)}")
