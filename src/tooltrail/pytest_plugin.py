"""pytest integration for tooltrail (registered through the ``pytest11`` entry point)."""
