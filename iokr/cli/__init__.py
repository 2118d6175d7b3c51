"""The ``iokr`` command line: argument parsing, progress and reports; the math lives in the library."""
