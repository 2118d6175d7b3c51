"""Safe model files: arrays in ``.npz`` plus JSON metadata with the library version and a SHA-256 checksum.

No pickle is ever written or read: files hold only numeric/string arrays and JSON.
"""

from ._model_file import FORMAT_VERSION, ModelFileError, load_model_file, save_model_file
from ._npz import read_npz

__all__ = ["FORMAT_VERSION", "ModelFileError", "load_model_file", "read_npz", "save_model_file"]
