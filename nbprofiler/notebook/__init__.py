"""The notebook's side of nbprofiler: ``%%torchprofile`` runs a cell under capture, then shows
its report, then does what follows a run (kept in the history, remembered as its cell's
latest, compared); and which cell ran.

These modules are thin adapters over the stages below them: they turn what a notebook gives
(a cell's text, its options, its id) into a run, and a run's end into what the user sees.
"""
