"""Reproduce the 2017 "TensorFlow cluster" article: upstream trainer, two patches, one verdict.

The package never prints and never imports invoke: it returns results and raises
:class:`reprokit.errors.KitError` subclasses; ``tasks.py`` does the talking.
"""

__version__ = "0.1.0"
