"""``python -m tooltrail``: the ``tooltrail`` command, for an environment whose scripts
directory is not on ``PATH`` (or to pick the interpreter explicitly)."""

from tooltrail.cli import main

if __name__ == "__main__":
    main(prog_name="tooltrail")
