"""The one base class of a user's configuration that cannot work.

A suite or gate file, a labels file, a plug-in, a judge's settings, a rubric, a registered
name, a TLS file: each has its own error class, named for what is wrong, and each is a
``ConfigError``. The command line catches this one class, once (``cli._Commands.invoke``),
and prints it as one line ``tooltrail COMMAND: what`` with exit code 2; its message names
the file, line and field where it can.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration a user wrote or installed cannot work; ``str()`` says where and why."""
