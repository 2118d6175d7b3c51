"""Saving and loading fitted metabolite models through :mod:`iokr.io` (npz + JSON, checksummed, no pickle).

The file holds everything needed to score new spectra: the training spectra (peaks, precursors, accessions,
licences), the training fingerprints, the base-kernel parameters, the MKL weights, the IOKR hyperparameters, the
cleaning and fingerprint settings, the cross-validation table, the base kernels' raw diagonals
(``train_raw_diags``), and (``fitted_state_version`` 1) the IOKR's fitted state (``state_*``,
:meth:`iokr.IOKR.fitted_state`): the Cholesky factor of the transformed Gram (packed lower triangle), its shift and
jitter, and the input and output transforms' statistics.

Loading restores the IOKR from that state: no spectrum kernel on training pairs, no factorization, no output Gram of
the training fingerprints (which only cosine decoding and prediction norms read; computed on first use). On the
bundled two-type model (1,649 + 1,015 structures) building both sub-models took 0.92 s of CPU with the refit from
the stored Gram (0.6 s of it the output Gram) and 0.29 s restored. The combined training Gram itself
(``train_gram``) is stored only when there is no state to restore (output kernels with explicit features, such as
``"linear"``, which are refitted on it): scoring never reads it, and leaving it out takes 30 MB of the bundled
model's 87 MB of arrays (13 MB of its 29 MB file) and their reading off every ``identify``. The scores are those
of a refit bit for bit (the same arrays). Files without the state (written before it) are refitted from their
stored Gram; files without either (older still) from their stored spectra, as they were then; a newer
``fitted_state_version`` is refused with a one-line error asking to retrain.
"""

from __future__ import annotations

import numpy as np

from ....io import ModelFileError, load_model_file, save_model_file
from ..chemistry._fingerprints import Fingerprinter
from ..spectra._cleaning import Cleaning
from ..spectra._spectra import Spectra
from ._model import MetaboliteIdentifier

KIND = "metabolites"

#: Version of the stored IOKR state (sub-model metadata ``fitted_state_version``, arrays ``state_*``); a file with a
#: newer one is refused with a one-line error, a file without one is refitted from its stored Gram.
FITTED_STATE_VERSION = 1
STATE_PREFIX = "state_"


def fitted_state(model):
    """The IOKR state a sub-model file stores (:meth:`iokr.IOKR.fitted_state`), or ``{}`` for an output kernel with
    explicit features (``"linear"``: refitted at load, as before)."""
    if model.iokr_.output_.explicit:
        return {}
    return model.iokr_.fitted_state()


def submodel_arrays(model, fingerprinter, prefix=""):
    """The arrays of one fitted :class:`MetaboliteIdentifier` (names prefixed by ``prefix``) and its metadata."""
    S = model.train_spectra_
    Y = model.train_outputs_
    binary = fingerprinter.binary
    arrays = {
        "train_mz": S.mz, "train_intensity": S.intensity, "train_offsets": S.offsets,
        "train_precursor_mz": S.precursor_mz,
        "train_keys": np.array([(m.get("inchikey") or "") for m in S.metadata], dtype="U27"),
        "train_inchi": np.array([(m.get("inchi") or "") for m in S.metadata]),
        "train_accessions": np.array([";".join(a or "" for a in m.get("accessions", [m.get("accession")]))
                                      for m in S.metadata]),
        "train_licenses": np.array([(m.get("license") or "") for m in S.metadata]),
        "weights": model.weights_,
        # the kernel list beside its weights, under the members' SHA-256: see _check_kernel_binding
        "kernels": np.array([str(k) for k in model.kernels]),
        "train_raw_diags": np.asarray(model.train_raw_diags_, dtype=np.float64).reshape(len(model.weights_), len(S)),
        "Y_packed" if binary else "Y_counts": np.packbits(Y > 0, axis=1) if binary else
        np.clip(Y, 0, 255).astype(np.uint8),
    }
    state = fitted_state(model)
    arrays.update({STATE_PREFIX + name: value for name, value in state.items()})
    if not state:  # no IOKR state to restore (an output kernel without one): the Gram it is fitted on again
        arrays["train_gram"] = np.asarray(model.train_gram_, dtype=np.float64)
    # numpy scalars (accepted by fit, e.g. np.float32 from a grid array) as the Python numbers JSON holds
    params = {k: v.item() if isinstance(v, np.generic) else v for k, v in model.get_params().items()}
    params["kernels"] = list(params["kernels"])
    params["weights"] = [float(w) for w in model.weights_]
    meta = {"model_params": params, "n_train": len(S), "n_output_features": int(Y.shape[1])}
    if state:
        meta["fitted_state_version"] = FITTED_STATE_VERSION
    return {prefix + k: v for k, v in arrays.items()}, meta


def save_identifier(path, model, fingerprinter, cleaning, extra=None):
    """Write a fitted :class:`MetaboliteIdentifier` with its fingerprint and cleaning settings.

    This writes a file of one model; :func:`~._submodels.save_metabolite_model` writes several, one per precursor
    type.

    Parameters
    ----------
    path : str or Path
        Model file to write (atomically).
    model : MetaboliteIdentifier
        The fitted model.
    fingerprinter : Fingerprinter
        Fingerprint settings of its training fingerprints.
    cleaning : Cleaning
        Peak cleaning settings of its training spectra.
    extra : dict, optional
        Further JSON-serializable metadata (``extra``: cross-validation table, calibration, training counts).

    Returns
    -------
    path : Path
        The file written.
    """
    arrays, meta = submodel_arrays(model, fingerprinter)
    meta = {**meta, "fingerprint": fingerprinter.params(), "cleaning": cleaning.params()}
    if extra:
        meta["extra"] = extra
    return save_model_file(path, arrays, meta, kind=KIND)


def read_model(path):
    """A model file's checked contents, not refitted yet: ``(arrays, metadata, fingerprinter)``.

    Cheap next to :func:`load_identifier`'s refit; pass the result to it to avoid reading the file twice.
    """
    arrays, meta = load_model_file(path, kind=KIND)
    try:
        return arrays, meta, Fingerprinter(**meta["fingerprint"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"Model file {path} has no usable fingerprint settings ({exc}).") from None


def load_fingerprinter(path):
    """Read the fingerprint settings of a model file (for indexing a structure database with its fingerprints).

    Parameters
    ----------
    path : str or Path
        The model file (its checksums verified; the model itself is not rebuilt).

    Returns
    -------
    fingerprinter : Fingerprinter
        The fingerprints the model was trained on.
    """
    return read_model(path)[2]


def load_identifier(path, contents=None):
    """Read a model file and rebuild the fitted identifier.

    Parameters
    ----------
    path : str or Path
        A model file of one model (or of one sub-model; files of several need :func:`load_metabolite_model`).
    contents : tuple, optional
        :func:`read_model`'s result for ``path``, when already read.

    Returns
    -------
    model : MetaboliteIdentifier
        The fitted identifier.
    fingerprinter : Fingerprinter
        Its fingerprint settings.
    cleaning : Cleaning
        Its peak cleaning settings.
    metadata : dict
        The file's metadata (for a file of one sub-model, with that sub-model's record as ``extra``).
    """
    arrays, meta, fingerprinter = read_model(path) if contents is None else contents
    entries = meta.get("submodels")
    if entries is not None:
        # a file of sub-models (one per precursor type): the one sub-model, with its own record as "extra"
        if not isinstance(entries, list) or len(entries) != 1 or not isinstance(entries[0], dict):
            n = len(entries) if isinstance(entries, list) else "?"
            raise ModelFileError(f"Model file {path} holds {n} sub-models (one per precursor type); load it with "
                                 "load_metabolite_model.")
        entry = entries[0]
        cleaning = rebuild_cleaning(meta, path)
        model = rebuild_submodel(path, arrays, entry, fingerprinter, cleaning, entry.get("prefix", ""))
        return model, fingerprinter, cleaning, {**meta, "extra": entry.get("extra") or {}}
    cleaning = rebuild_cleaning(meta, path)
    return rebuild_submodel(path, arrays, meta, fingerprinter, cleaning, ""), fingerprinter, cleaning, meta


_CONTENT_ERRORS = (KeyError, TypeError, ValueError, IndexError, OverflowError, AttributeError,
                   np.linalg.LinAlgError)


def _inconsistent(path, exc):
    # A file that passed its checksum but whose content the model rejects (written by a modified program, or
    # hand-edited and re-signed): one clear error instead of a failure deep inside the kernels.
    return ModelFileError(f"Model file {path} is incomplete or inconsistent ({type(exc).__name__}: {exc}).")


def rebuild_cleaning(meta, path):
    """The :class:`Cleaning` of a model file's metadata."""
    try:
        return Cleaning(**meta["cleaning"])
    except _CONTENT_ERRORS as exc:
        raise _inconsistent(path, exc) from None


def _check_kernel_binding(a, params, prefix):
    """The metadata's kernel list and MKL weights must be the arrays ``kernels`` and ``weights`` (each bound by its
    member SHA-256): a list permuted or edited in the metadata alone would apply each weight to another kernel.
    Files written before the ``kernels`` member existed are checked on the weights alone."""
    weights = np.asarray(a["weights"])
    declared = np.asarray(params["weights"], dtype=np.float64)
    if weights.dtype.kind != "f" or weights.shape != declared.shape or not np.array_equal(weights, declared):
        raise ValueError(f"the MKL weights of 'model_params' {declared.tolist()} are not the stored array "
                         f"{prefix + 'weights'!r} ({weights.dtype} of shape {weights.shape})")
    if "kernels" in a:
        stored = [str(k) for k in a["kernels"].ravel()] if a["kernels"].dtype.kind == "U" else None
        if a["kernels"].ndim != 1 or stored != [str(k) for k in params["kernels"]]:
            raise ValueError(f"the kernel list of 'model_params' {list(params['kernels'])} is not the stored list "
                             f"{prefix + 'kernels'!r} {stored}: the weights would apply to the wrong kernels")


def _stored_training_gram(a, prefix, params, n_train):
    """``(K, weights, raw_diags)`` of a sub-model's stored arrays, checked (shapes, dtype, finite, non-negative
    diagonals) before the fit reads them; ``K`` is None for a file that stores the fitted IOKR state instead."""
    K, diags = a.get("train_gram"), a["train_raw_diags"]
    weights = np.asarray(params["weights"], dtype=np.float64)
    n_kernels = len(params["kernels"])
    if K is not None and (K.dtype != np.float64 or K.shape != (n_train, n_train) or not np.isfinite(K).all()):
        raise ValueError(f"array {prefix}train_gram must be a finite float64 ({n_train}, {n_train}) Gram, got "
                         f"{K.dtype} of shape {K.shape}")
    if diags.dtype != np.float64 or diags.shape != (n_kernels, n_train) or not (np.isfinite(diags).all()
                                                                                and (diags >= 0).all()):
        raise ValueError(f"array {prefix}train_raw_diags must hold finite non-negative float64 of shape "
                         f"({n_kernels}, {n_train}), got {diags.dtype} of shape {diags.shape}")
    if weights.shape != (n_kernels,):
        raise ValueError(f"'weights' must hold one weight per kernel ({n_kernels}), got {weights.shape[0]}")
    return K, weights, list(diags)


def rebuild_submodel(path, arrays, meta, fingerprinter, cleaning, prefix=""):
    """Refit one stored :class:`MetaboliteIdentifier` from its arrays (names prefixed by ``prefix``) and its
    metadata (``model_params``, ``n_output_features``), checking every array first."""
    try:
        params = dict(meta["model_params"])
        params["kernels"] = tuple(params["kernels"])
        params["weights"] = tuple(params["weights"])
        n_feat = int(meta["n_output_features"])
        if n_feat != fingerprinter.n_features:
            raise ValueError(f"'n_output_features' is {n_feat} but the fingerprint has {fingerprinter.n_features}")
        a = {name[len(prefix):]: value for name, value in arrays.items() if name.startswith(prefix)}
        _check_kernel_binding(a, params, prefix)
        if "Y_packed" in a:
            Y = np.unpackbits(a["Y_packed"], axis=1, count=n_feat).astype(np.float64)
        else:
            Y = a["Y_counts"].astype(np.float64)
        keys, inchis = a["train_keys"], a["train_inchi"]
        accessions, licenses = a["train_accessions"], a["train_licenses"]
        n_train = a["train_precursor_mz"].shape[0] if a["train_precursor_mz"].ndim == 1 else -1
        for name in ("train_keys", "train_inchi", "train_accessions", "train_licenses"):
            if a[name].shape != (n_train,) or a[name].dtype.kind != "U":
                raise ValueError(f"array {prefix + name!r} must be 1-D text of length {n_train}, got {a[name].dtype} "
                                 f"of shape {a[name].shape}")
        if Y.shape != (n_train, n_feat):
            raise ValueError(f"the training fingerprints have shape {Y.shape}, expected {(n_train, n_feat)}")
        metadata = [{"inchikey": str(k), "inchi": str(i), "accessions": str(acc).split(";"), "license": str(lic)}
                    for k, i, acc, lic in zip(keys, inchis, accessions, licenses, strict=True)]
        for name in ("train_mz", "train_intensity", "train_precursor_mz", "train_offsets"):
            if a[name].dtype.kind not in ("iu" if name == "train_offsets" else "fiu"):
                raise ValueError(f"array {prefix + name!r} has dtype {a[name].dtype}")
        S = Spectra(a["train_mz"], a["train_intensity"], a["train_offsets"], a["train_precursor_mz"], metadata)
        if not (np.isfinite(S.mz).all() and np.isfinite(S.intensity).all() and (S.mz > 0).all()
                and (S.intensity >= 0).all() and not np.isinf(S.precursor_mz).any()):
            raise ValueError("the training peaks must be finite with m/z > 0 and intensity >= 0")
        if not np.isfinite(Y).all():
            raise ValueError("the training fingerprints are not finite")
        cleaning.merged(cleaning.single(S[:2]))  # the stored cleaning settings must work on stored spectra
        model = MetaboliteIdentifier(**params)
        state = _stored_state(path, a, meta)
        if "train_gram" not in a and state is None:  # written before either was stored: refit on the spectra
            return model.fit(S, Y)
        return model.fit(S, Y, training_gram=_stored_training_gram(a, prefix, params, n_train), fitted_state=state)
    except ModelFileError:
        raise
    except _CONTENT_ERRORS as exc:
        raise _inconsistent(path, exc) from None


def _stored_state(path, a, meta):
    """The sub-model's stored IOKR state (``state_*`` arrays), or None for a file written before it was stored
    (then refitted from the stored Gram: the same scores, one factorization and the output Gram later)."""
    version = meta.get("fitted_state_version")
    if version is None:
        if any(name.startswith(STATE_PREFIX) for name in a):
            raise ValueError("'state_*' arrays without 'fitted_state_version'")
        return None
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= FITTED_STATE_VERSION:
        raise ModelFileError(f"Model file {path} stores a fitted state of version {version!r}; this iokr reads "
                             f"version {FITTED_STATE_VERSION}: retrain the model with this iokr, or upgrade iokr.")
    return {name[len(STATE_PREFIX):]: value for name, value in a.items() if name.startswith(STATE_PREFIX)}
