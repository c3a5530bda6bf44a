"""Command-line interface (``gaprank``)."""
