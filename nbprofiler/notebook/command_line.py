"""The ``%%torchprofile`` command line: its flags, made from the fields of ``ProfileOptions``, and
the split of a ``%torchprofile`` line into its options and the statement it profiles.

An option is declared once, as a field of ``ProfileOptions`` with its default, type and help;
the magic's parser is made from those fields, so a new option reaches the magic by itself,
and a bad value is refused by ``ProfileOptions`` with the same message as from Python.
"""
from __future__ import annotations

import argparse
import dataclasses
import re
from typing import Any, Callable, TypeVar, get_args, get_type_hints

from IPython.core.magic_arguments import argument

from ..options import ProfileOptions, long_flag
from .option_names import is_variable_name

Magic = TypeVar("Magic", bound=Callable[..., Any])


def profile_options(magic: Magic) -> Magic:
    """Add a flag for each field of ``ProfileOptions`` to ``magic``'s arguments, in the fields'
    order: an integer takes a whole number (argparse refuses other text), a choice takes text
    that ``ProfileOptions`` checks, and a switch on by default is a ``--no-...`` flag."""
    for flag in reversed(_flags()):  # IPython adds a magic's arguments from the last decorator applied
        magic = flag(magic)
    return magic


def _flags() -> list[argument]:
    hints = get_type_hints(ProfileOptions)
    flags = []
    for option in dataclasses.fields(ProfileOptions):
        kind, about = hints[option.name], option.metadata
        if kind is bool:
            on = option.default is True
            name = long_flag(("no_" if on else "") + option.name)
            details: dict[str, Any] = {"action": "store_false" if on else "store_true"}
        else:
            name = long_flag(option.name)
            details = {"default": option.default, "metavar": about["metavar"]}
            if int in (kind, *get_args(kind)):
                details["type"] = int
        names = (about["short"], name) if about["short"] else (name,)
        flags.append(argument(*names, dest=option.name, help=about["help"], **details))
    return flags


def options_from(args: argparse.Namespace) -> ProfileOptions:
    """The ``ProfileOptions`` the parsed command line gives; an ``OptionError`` for a bad value."""
    return ProfileOptions(**{option.name: getattr(args, option.name) for option in dataclasses.fields(ProfileOptions)})


def asks_for_help(argv: list[str]) -> bool:
    return any(word in _HELP_FLAGS for word in argv)


_HELP_FLAGS = ("-h", "--help")  # IPython's magic parsers have no help action: the magic answers these itself
# A word as a shell splits it: unquoted runs and quoted strings, glued together; a lone
# quote that never closes is kept in the word, so that arg_split reports it.
_SHELL_WORD = re.compile(r"""(?:[^\s'"]+|'[^']*'|"(?:\\.|[^"\\])*"|['"])+""")


def split_statement(line: str, parser: argparse.ArgumentParser) -> tuple[str, str]:
    """The line magic's options, and its statement verbatim from the first word that is
    neither an option nor an option's value (so ``y = -x`` is code, not a flag). A quoted
    value is one word, as the shell would split it (``--trace "a b.json"``)."""
    expects_value = may_take_value = False
    for word in _SHELL_WORD.finditer(line):
        token = word.group()
        if expects_value:
            expects_value = False
        elif may_take_value and _names_a_value(token, line[word.end():]):
            may_take_value = False
        elif token in _HELP_FLAGS:
            continue
        elif token.startswith("-") and token.split("=", 1)[0] in parser._option_string_actions:
            action = parser._option_string_actions[token.split("=", 1)[0]]
            given = "=" in token
            expects_value = action.nargs not in (0, "?") and not given
            may_take_value = action.nargs == "?" and not given
        else:
            return line[:word.start()], line[word.start():].strip()
    return line, ""


def _names_a_value(word: str, rest: str) -> bool:
    """Whether ``word``, after an option whose value is optional (``--compare [VAR]``), is that
    value rather than the statement's start: a name that some statement follows, and that
    does not itself start the statement (``--compare y = model(x)`` profiles ``y = ...``)."""
    follows = rest.lstrip()
    starts_code = follows[:1] in ("=", "(", ".", "[", ",", ":") or follows[:2] in ("+=", "-=", "*=", "/=")
    return is_variable_name(word) and bool(follows) and not starts_code
