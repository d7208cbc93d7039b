"""What ``%load_ext nbprofiler`` costs a fresh kernel: seconds and resident memory, and whether
it imported torch.

Each run is a fresh Python process with a real IPython shell, as a kernel that has not
imported torch yet; the figures are the medians over the runs. Usage:

    python bench/load_ext_cost.py [RUNS]
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys

PROBE = """
import json, sys, time
from IPython.core.interactiveshell import InteractiveShell

def rss_mib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024

shell = InteractiveShell.instance()
before, start = rss_mib(), time.perf_counter()
shell.run_line_magic("load_ext", "nbprofiler")
seconds, after = time.perf_counter() - start, rss_mib()
print(json.dumps({"s": seconds, "mib": after - before, "torch": "torch" in sys.modules}))
"""


def main(runs: int = 5) -> int:
    figures = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
        figures.append(json.loads(out.stdout.splitlines()[-1]))
    seconds = statistics.median(f["s"] for f in figures)
    mib = statistics.median(f["mib"] for f in figures)
    torch = {f["torch"] for f in figures}
    print(f"%load_ext nbprofiler in a fresh shell ({runs} runs, median): {seconds:.2f} s, "
          f"+{mib:.0f} MiB resident; torch imported: {' / '.join(map(str, sorted(torch)))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:2])))
