"""Reading and rewriting the members of a zip (npz) archive, for the tests that tamper with model files."""

import zipfile


def read_members(path):
    """``{name: bytes}`` of every member of the archive at ``path``."""
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def write_members(path, members):
    """Write ``members`` (``{name: bytes}``, in order) as a deflated zip archive at ``path``; returns ``path``."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path
