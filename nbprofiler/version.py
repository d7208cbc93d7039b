"""The package's version: written into each saved report and kept run, shown as ``nbprofiler.__version__``."""
__version__ = "0.1.0"
