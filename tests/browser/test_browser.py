"""The JupyterLab extension in a real browser (tests/browser/*.mjs).

Each test starts a JupyterLab server on localhost with a temporary notebook
directory and a token, copies a notebook there, and runs a Playwright script
against it with Debian's Chromium: lab_e2e.mjs on notebooks/01_quickstart.ipynb
(the commands, the explorer, the saved report), try_it_e2e.mjs on a slow-loader
notebook ("Try it" on a suggestion, and the comparison it brings). Screenshots
and each script's result (with timings) go to build/screenshots/.

Skipped when Node.js or Chromium is missing (failed instead under
NBPROFILER_REQUIRE_LABEXTENSION=1, as in CI). When both are there, the
extension must be built and installed (labextension/build.sh --install, which
`make test` runs), and playwright-core must be in labextension/node_modules.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from browser.prerequisites import missing

from nbprofiler.render.bundle import mimebundle
from nbprofiler.render.frontend import MIME_TYPE

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "browser" / "lab_e2e.mjs"
TRY_IT_SCRIPT = ROOT / "tests" / "browser" / "try_it_e2e.mjs"
EXPORT_SCRIPT = ROOT / "tests" / "browser" / "export_e2e.mjs"
NOTEBOOK = ROOT / "notebooks" / "01_quickstart.ipynb"
SHOTS = ROOT / "build" / "screenshots"
CHROMIUM = os.environ.get("NBP_CHROMIUM", "/usr/bin/chromium")

pytestmark = pytest.mark.slow


def _node() -> str:
    """Node.js's path; the test skips (or fails, where required) without it."""
    node = shutil.which("node")
    if node is None:
        missing("Node.js is not installed")
    return node


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _extension_installed() -> str:
    out = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"],
        capture_output=True, text=True, timeout=120,
    )
    return out.stdout + out.stderr


def _stale_install() -> str | None:
    """Why the served extension may not be the current source, or None."""
    built = ROOT / "nbprofiler" / "labextension"
    installed = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "nbprofiler"
    if not (built / "package.json").is_file():
        return "the extension is not built"
    newest_source = max(p.stat().st_mtime for d in ("src", "style", "schema")
                        for p in (ROOT / "labextension" / d).rglob("*") if p.is_file())
    if newest_source > (built / "static" / "style.js").stat().st_mtime:
        return "labextension/ sources are newer than the built extension"
    if installed.is_dir() and not installed.is_symlink():
        built_files = sorted(p.name for p in (built / "static").iterdir())
        installed_static = installed / "static"
        installed_files = sorted(p.name for p in installed_static.iterdir()) if installed_static.is_dir() else []
        if built_files != installed_files:
            return f"the installed copy in {installed} differs from the build"
    return None


def _wait_for_server(url: str, token: str, proc: subprocess.Popen, log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            req = urllib.request.Request(f"{url}api/status",  # noqa: S310 - localhost only
                                         headers={"Authorization": f"token {token}"})
            with urllib.request.urlopen(req, timeout=5) as resp:  # noqa: S310 - localhost only
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"JupyterLab did not answer within {timeout:.0f} s:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    # The server runs in its own process group, with its kernels.
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


def _check_prerequisites() -> None:
    """Skip without Node.js or Chromium; fail when the extension is missing or not the current build."""
    _node()
    if not os.access(CHROMIUM, os.X_OK):
        missing(f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    if not (ROOT / "labextension" / "node_modules" / "playwright-core").is_dir():
        pytest.fail("playwright-core is missing: run labextension/build.sh (it installs the extension's node modules)")
    stale = _stale_install()
    if stale:
        pytest.fail(f"{stale}: run labextension/build.sh --install")
    listing = _extension_installed()
    if not any("nbprofiler" in line and "enabled" in line and "OK" in line for line in listing.splitlines()):
        pytest.fail("the nbprofiler JupyterLab extension is not installed: run labextension/build.sh --install\n"
                    f"{listing}")


def _run_in_lab(tmp_path: Path, script: Path, notebook: Path, shots: Path, timeout: float) -> dict:
    """Start JupyterLab on a temporary copy of ``notebook``, run the Playwright ``script`` against it,
    and return its result (also written to ``shots``/result.json); fails the test when the script fails."""
    _check_prerequisites()
    root = tmp_path / "notebooks"
    (root / "build").mkdir(parents=True)
    shutil.copy(notebook, root / notebook.name)
    home = tmp_path / "jupyter"
    settings = home / "settings"
    # No news or update pop-ups over the page.
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
        PYTHONUNBUFFERED="1",
    )
    env.pop("JUPYTER_PATH", None)
    port = _free_port()
    token = secrets.token_hex(16)
    url = f"http://127.0.0.1:{port}/"
    log = tmp_path / "jupyterlab.log"
    cmd = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True", "--ServerApp.terminals_enabled=False",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    shots.mkdir(parents=True, exist_ok=True)
    for old in [*shots.glob("*.png"), shots / "result.json"]:
        old.unlink(missing_ok=True)
    t0 = time.monotonic()
    with log.open("w") as log_file:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        _wait_for_server(url, token, proc, log)
        server_s = time.monotonic() - t0
        run = subprocess.run(
            [_node(), str(script)],
            cwd=ROOT,
            env=dict(
                os.environ,
                NBP_LAB_URL=url, NBP_LAB_TOKEN=token, NBP_NOTEBOOK=notebook.name, NBP_ROOT_DIR=str(root),
                NBP_SCREENSHOTS=str(shots), NBP_CHROMIUM=CHROMIUM,
            ),
            capture_output=True, text=True, timeout=timeout,
        )
    finally:
        _stop(proc)
    print(f"JupyterLab server up in {server_s:.1f} s")
    print(run.stdout[-6000:])
    result_line = next((line for line in reversed(run.stdout.splitlines()) if line.startswith("RESULT ")), None)
    result = json.loads(result_line[len("RESULT "):]) if result_line else {}
    if result:
        result["serverStartSeconds"] = round(server_s, 1)
        (shots / "result.json").write_text(json.dumps(result, indent=2))
    assert run.returncode == 0 and result.get("ok"), (
        f"browser test failed: {result.get('error', 'no result')}\n"
        f"--- script stderr ---\n{run.stderr[-4000:]}\n--- server log ---\n{log.read_text()[-4000:]}"
    )
    return result


def test_profile_cell_explorer_and_saved_report(tmp_path: Path) -> None:
    _run_in_lab(tmp_path, SCRIPT, NOTEBOOK, SHOTS, timeout=900)


def write_notebook(path: Path, *sources: str) -> Path:
    """Write a notebook of code cells, one per source, for a browser scenario to run."""
    cells: list[dict[str, Any]] = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": source.splitlines(keepends=True)} for source in sources]
    notebook = {"cells": cells,
                "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(notebook, indent=1))
    return path


def saved_output_notebook(path: Path, report: Any, source: Path) -> Path:
    """A notebook whose first cell holds ``report``'s saved output (text, HTML and the extension's payload,
    no explorer: what a notebook saved after a run holds once its kernel is gone), and whose second cell
    loads ``source`` (a trace file or a folder of ranks) again."""
    bundle = mimebundle(report, include={"text/plain", "text/html", MIME_TYPE})
    notebook = json.loads(write_notebook(path, f"nbprofiler.load({str(source)!r})",
                                         f"import nbprofiler\nnbprofiler.load({str(source)!r})").read_text())
    notebook["cells"][0].update(execution_count=1, outputs=[{"output_type": "display_data", "data": bundle,
                                                             "metadata": {}}])
    path.write_text(json.dumps(notebook, allow_nan=False))
    return path


def _slow_loader_notebook(path: Path) -> Path:
    """A notebook whose training loop waits on a sleep-bound DataLoader (20 ms a sample, no workers):
    its profile suggests DataLoader workers, which "Try it" then measures."""
    setup = "\n".join([
        "import sys",
        f"sys.path.insert(0, {str(ROOT / 'tests')!r})",
        "import torch",
        "import torch.nn.functional as F",
        "from torch import nn",
        "from torch.utils.data import DataLoader",
        "from workloads import SlowDataset",
        "%load_ext nbprofiler",
        "torch.manual_seed(0)",
        "train_loader = DataLoader(SlowDataset(160, 0.02), batch_size=8, num_workers=0)",
        "model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))",
        "opt = torch.optim.SGD(model.parameters(), lr=0.01)",
    ])
    training = "\n".join([
        "%%torchprofile --active 5",
        "for x, y in train_loader:",
        "    loss = F.cross_entropy(model(x), y)",
        "    opt.zero_grad()",
        "    loss.backward()",
        "    opt.step()",
    ])
    return write_notebook(path, setup, training)


def test_try_it_reprofiles_a_suggestion_and_shows_the_comparison(tmp_path: Path) -> None:
    """Click "Try it" on the DataLoader suggestion of a slow-loader notebook: a marked cell with the
    DataLoader code appears right above it (Run All runs the fix, then the profile), the profiled cell
    re-runs with --compare --tried, and its comparison says "faster" with an interval and the stated
    gain beside the measured one."""
    notebook = _slow_loader_notebook(tmp_path / "slow_loader.ipynb")
    result = _run_in_lab(tmp_path / "lab", TRY_IT_SCRIPT, notebook, SHOTS / "try_it", timeout=300)
    print(json.dumps({k: result.get(k) for k in ("triedCell", "triedAt", "profiledAt", "verdict",
                                                  "statedVsMeasured")}, indent=1))
    assert result["triedCell"].startswith("# nbprofiler: trying ")
    assert result["triedAt"] == result["profiledAt"] - 1, result


def test_export_names_files_per_run_keeps_the_first_and_downloads_in_the_page(tmp_path: Path) -> None:
    """The Export tab's trace is named after the notebook, the cell and the time; its link downloads
    the very bytes the kernel wrote; a second save takes a new name and says so."""
    notebook = _slow_loader_notebook(tmp_path / "export me.ipynb")
    result = _run_in_lab(tmp_path / "lab", EXPORT_SCRIPT, notebook, SHOTS / "export", timeout=300)
    print(json.dumps({k: result.get(k) for k in ("tracePath", "downloadedBytes")}, indent=1))
