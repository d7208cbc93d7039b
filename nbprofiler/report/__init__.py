"""The Report: immutable data plus the analyses over it, with its renderings."""
from .report import Report

__all__ = ["Report"]
