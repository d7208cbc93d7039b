"""What text from a run may go into a suggestion's code: the one definition.

A suggestion's code is pasted into a notebook, and "Try it" runs it, so the text
it is built from decides what runs. A report made by this kernel holds the user's
own names and cell; a report loaded from a ``.nbprof`` file, kept in the run
history or read from a trace was written by whoever made that file, and every name
and line in it is theirs. Two kinds of text reach code:

**A name** (``code_name``): the loader's and the dataset's variable, the model's.
It goes into code only as an identifier or a dotted chain of identifiers
(``train_loader``, ``self.loader``, ``data.train_ds``), each part plain ASCII
(``str.isidentifier`` would let in letters that Python's NFKC normalisation turns
into others, ``ｅｘｅｃ`` into ``exec``, and look-alikes a reader cannot tell
apart), no part a keyword (soft keywords such as ``match`` and ``type`` are names)
and none beginning with ``__`` (Python's internals: ``__import__``,
``__globals__``). Anything else is never written into the code, not even in a
comment, where a line break in it would start a line of code: the code uses a
generic name and a comment says to put the user's own there.

**Lines of the cell** (``copyable``), which the autocast and accumulation edits,
the leak fix and the sync fix copy. The lines are parsed again as they will be
pasted (``ast``: IPython's ``!cmd`` and ``%magic`` lines do not parse, so they
are refused) and every name in them judged. Where a name is bound in the file's
cell does not matter: pasted lines read the notebook's value of every name they
do not bind themselves, so a file that binds ``os = model`` in a line that is not
copied still calls the notebook's ``os``. What matters is what a name can reach.
A training step computes on the notebook's model, tensors and optimizer; it needs
no way to run text as code, to reach Python's internals, to start processes, to
touch files or the network, or to load code or pickles, and the rule refuses every
name that gives one:

* no ``import``, ``def``, ``class``, ``lambda``, ``global``, ``nonlocal``,
  ``await`` or ``yield``: imports bring in modules the rule cannot judge by name,
  and definitions run their code later, out of sight;
* no name or attribute beginning with ``__`` (``__import__``, ``__class__``,
  ``__globals__``) and no attribute beginning with ``_`` (``torch._C``,
  ``os._exit``): Python's and libraries' internals;
* no builtin that runs text, reads or writes files, asks for input or hands out
  namespaces (``_BUILTINS_REFUSED``), and no name or attribute in ``_REFUSED``: the
  modules that run processes, reach files, the network or the interpreter (``os``,
  ``subprocess``, ``sys``, ``pickle``; as attributes too, since ``torch.os`` is the
  ``os`` module), IPython's display of HTML and JavaScript (which runs in the page),
  those that import by a dotted string (``pydoc``, ``logging``'s ``dictConfig``),
  and the verbs that run, load, save or delete (``system``, ``popen``, ``load``,
  ``save``, ``hub``, ``remove``) or reach frames (``f_globals``, ``gi_frame``).

String literals are not judged: only what a name reaches can interpret them. Names
are judged after Python's own normalisation (``ｏｓ`` is parsed as ``os``).

The lists name what a step never needs; what they do not name passes. So they are
the second of three defences, not the only one. The first is that a report made by
this kernel is the only one whose cell is copied unchecked (``Report.made_here``);
the third is that "Try it" inserts the code of any other report without running it,
and every card shows its code whole, wrapped, so that nothing in it hides past the
card's edge.
"""
from __future__ import annotations

import ast
import keyword
import re
import textwrap

# An ASCII identifier: the parts of a name that may go into code.
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Where str.splitlines breaks a line and Python does not (it breaks at \n, \r and \r\n only).
_SPLITLINES_ONLY = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")

# Builtins a step never calls: they run text as code, reach namespaces or the interpreter, read or
# write files, or make classes and functions.
_BUILTINS_REFUSED = frozenset({
    "eval", "delattr", "globals", "locals", "vars", "input", "breakpoint", "help", "exit", "quit", "memoryview",
    "type", "object", "super", "classmethod", "staticmethod", "property", "copyright", "credits", "license",
})

# Refused as a name and as an attribute (``torch.os`` is the os module, ``np.ctypeslib`` ctypes).
_REFUSED = frozenset({
    # modules that run processes, reach files, the network, the interpreter or native code
    "os", "posix", "nt", "sys", "subprocess", "shutil", "pathlib", "Path", "io", "tempfile", "glob", "fileinput",
    "socket", "ssl", "urllib", "http", "requests", "ftplib", "smtplib", "webbrowser", "ctypes",
    "ctypeslib", "cffi", "importlib", "builtins", "runpy", "code", "codeop", "pty", "signal",
    "multiprocessing", "threading", "asyncio", "concurrent", "gc", "inspect", "atexit", "site", "sysconfig",
    "platform", "pkgutil", "zipimport", "distutils", "setuptools", "f2py", "IPython", "ipykernel", "jupyter_client",
    "get_ipython", "display", "Javascript", "HTML",
    # modules that load pickles or code, or import by a dotted string
    "pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle", "joblib", "jsonpickle", "yaml", "pydoc",
    "logging", "operator", "functools", "string", "hydra", "omegaconf", "pd", "pandas",
    # verbs that run, load, save, delete or reach frames
    "system", "popen", "fork", "forkpty", "kill", "killpg", "startfile", "posix_spawn", "posix_spawnp", "Popen",
    "hub", "package", "cpp_extension", "dictConfig", "fileConfig", "listen", "locate", "resolve_name",
    "import_module", "read_pickle", "to_pickle", "fromfile", "tofile", "from_file", "memmap", "remove", "unlink",
    "rmdir", "rmtree", "rename", "chmod", "chown", "symlink", "link", "mkdir", "makedirs", "environ", "putenv",
    "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "gi_frame", "gi_code", "cr_frame", "ag_frame",
    "tb_frame", "tb_next", "compile", "exec", "getattr", "setattr", "open",
    # torch.distributed's verbs that connect to a rendezvous or unpickle what a peer sends
    "init_process_group", "rpc", "broadcast_object_list", "all_gather_object", "gather_object",
    "scatter_object_list", "send_object_list", "recv_object_list",
})
# Refused as attributes by their start: ``load``, ``loads``, ``load_library``, ``load_inline``,
# ``save``, ``savetxt``, ``write``, ``write_text``, ``execv``, ``spawnv``; but not the nouns a
# loop's objects are named by (``self.loader``, ``self.writer``).
_REFUSED_PREFIXES = ("load", "save", "write", "exec", "spawn")
_NOUNS = frozenset({"loader", "loaders", "writer", "writers", "saver", "executor"})

# Statements and expressions a step does not need: imports, and code that runs later (see the docstring).
_REFUSED_NODES = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
                  ast.Global, ast.Nonlocal, ast.Await, ast.Yield, ast.YieldFrom)


def code_name(text: str | None) -> str | None:
    """``text`` where it may go into code as a name (see the module's docstring), else None."""
    if not text:
        return None
    parts = text.split(".")
    if all(_IDENTIFIER.match(p) and not keyword.iskeyword(p) and not p.startswith("__") for p in parts):
        return text
    return None


def copyable(source: str, first: int, last: int) -> bool:
    """Whether lines ``first`` to ``last`` (1-based) of a cell this kernel did not run may be
    copied into code: they parse as they will be pasted, and no name in them is refused (see
    the module's docstring). A source with line breaks that only ``str.splitlines`` breaks at
    (form feed, U+2028, ...) is refused whole: there the syntax tree's line numbers, which
    place the edits, name other lines of the text than those copied."""
    if _SPLITLINES_ONLY.search(source):
        return False
    try:
        tree = ast.parse(textwrap.dedent("\n".join(source.splitlines()[first - 1:last])))
    except SyntaxError:
        return False
    return not any(_refused(node) for node in ast.walk(tree))


def _refused(node: ast.AST) -> bool:
    if isinstance(node, _REFUSED_NODES):
        return True
    if isinstance(node, ast.Name):
        return node.id.startswith("__") or node.id in _BUILTINS_REFUSED or node.id in _REFUSED
    if isinstance(node, ast.Attribute):
        return (node.attr.startswith("_") or node.attr in _REFUSED
                or (node.attr.startswith(_REFUSED_PREFIXES) and node.attr not in _NOUNS))
    return False


def commented(text: str) -> str:
    """``text`` as comment lines, every line of it: quoted in code, a line break in it starts
    no line of code."""
    return "\n".join(f"# {line}" for line in text.splitlines() or [""])
