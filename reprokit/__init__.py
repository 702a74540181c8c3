"""Reproduce the 2017 "TensorFlow cluster" article: upstream trainer, a series of
reviewed patches (the article's two, then the lesson's and today's TensorFlow's), a three-part verdict.

The package never prints and never imports invoke: it returns results and raises
:class:`reprokit.errors.KitError` subclasses; ``tasks.py`` does the talking.
"""

from pathlib import Path

__version__ = "0.1.0"

# The folder that holds this package: what a child process's PYTHONPATH needs to run
# `python -m reprokit.<module>` (the supervisor, the probe) from a plain checkout.
PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)
