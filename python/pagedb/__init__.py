"""pagedb: datasets of variable-length samples, read by id in O(1) (placeholder)."""
from _pagedb import *  # noqa
