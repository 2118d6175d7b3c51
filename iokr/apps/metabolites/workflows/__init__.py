"""The jobs behind the command line, ``train``, ``identify`` and ``evaluate``: paths and settings in, results out."""
