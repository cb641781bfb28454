"""The version of privrelease (one place, imported by the package and the file format)."""

__version__ = "0.1.0"
