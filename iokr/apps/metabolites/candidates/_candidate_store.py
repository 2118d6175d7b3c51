"""The candidate store: structures keyed by molecular formula, with their fingerprints computed once and cached
in SQLite (:class:`CandidateStore`), shared by candidate lists, decoy lists and the training's CV lists."""

from __future__ import annotations

import functools

import numpy as np

from ....decoding import CountFeatures, PackedBinaryFeatures
from ....exceptions import IOKRDataError
from ....io import read_npz
from ..chemistry._fingerprint_cache import CACHE_MEMBERS, check_cache, digest
from ..chemistry._fingerprints import Fingerprinter
from ..chemistry._structures import may_need_parent, parent_of
from ._candidate_store_file import STORE_ROW, open_store_file
from ._sqlite_files import READ_ERRORS, describe_error
from ._store_format import check_rows, decode_compact, encode_compact, row_checksum


def _store_errors(method):
    """Report SQLite's errors on a store as IOKRDataError: locked by another process, disk full (the failed write
    rolled back) or damaged, told apart (:func:`~._sqlite_files.describe_error`)."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except READ_ERRORS as exc:
            if self.db.in_transaction:
                self.db.rollback()
            raise describe_error(exc, "Candidate store", self.label, remedy="delete it to rebuild the cache") \
                from None
    return wrapper


class CandidateStore:
    """Structures keyed by molecular formula, with fingerprints computed once and cached (SQLite, no server).

    Parameters
    ----------
    path : str or Path, default=""
        SQLite database file; created when missing. ``""`` (the default): a private temporary file that SQLite
        deletes when the store is closed or dropped; its pages live on disk beyond SQLite's small page cache, so a
        pool of candidates costs no resident memory (``":memory:"`` holds the whole database in memory: about
        350 MB for the 66,000 candidates of the bundled lists, against about 70 MB for a temporary file).
    fingerprinter : Fingerprinter, optional
        The fingerprint cached with each structure; a store created with other fingerprint parameters is
        refused (delete it or use another file).

    Notes
    -----
    Table ``structures``: the input text (InChI/SMILES) as primary key, the parse status, and of its parent
    structure (:func:`~._structures.parent_of`: salts reduced, isotopes apart) the first InChIKey block, the
    molecular formula, the fingerprint as a compact blob and a checksum of the row, verified on every read
    (:mod:`._store_format`, :mod:`._candidate_store_file`). Looking up cached structures costs one indexed query;
    only new texts are parsed.
    """

    @property
    def label(self):
        """The store's name in messages: its path, or "(temporary file)" for SQLite's private temporary file."""
        return self.path or "(temporary file)"

    def __init__(self, path="", fingerprinter=None):
        self.fingerprinter = Fingerprinter() if fingerprinter is None else fingerprinter
        self.path = str(path)
        self.db = open_store_file(self.path, repr(sorted(self.fingerprinter.params().items())), self.label)
        self.n_computed = 0
        self._cache = None

    def attach_cache(self, path):
        """Use a fingerprint cache written by :func:`export_fingerprint_cache` before parsing new structures.

        Parameters
        ----------
        path : str or Path
            The cache file (``.npz``).

        Returns
        -------
        n_cached : int
            Structures in the cache; 0, and nothing attached, when it holds other fingerprint parameters.
        """
        data = read_npz(path, what="Fingerprint cache")
        missing = [k for k in CACHE_MEMBERS if k not in data]
        if missing:
            raise IOKRDataError(f"Fingerprint cache {path} lacks the arrays {missing}.")
        if data["params"].ndim != 0 or str(data["params"]) != repr(sorted(self.fingerprinter.params().items())):
            return 0
        check_cache(path, data, self.fingerprinter.n_features)
        digest = data["digest"]
        self._cache = {
            "index": {d: i for i, d in enumerate(digest.tolist())}, "key14": data["key14"],
            "formula": data["formula"], "indptr": data["indptr"].astype(np.int64),
            "cols": data["cols"].astype(np.int64), "vals": data["vals"], "n_features": self.fingerprinter.n_features,
        }
        return digest.size

    def detach_cache(self):
        """Forget the attached fingerprint cache and free its memory (structures already added stay stored)."""
        self._cache = None

    def _from_cache(self, text):
        if self._cache is None:
            return None
        # NumPy's S8 strips trailing NUL bytes from stored digests: compare without them.
        i = self._cache["index"].get(digest(text).rstrip(b"\x00"))
        if i is None:
            return None
        c = self._cache
        fp = np.zeros(c["n_features"], dtype=np.uint8)
        a, b = c["indptr"][i], c["indptr"][i + 1]
        fp[c["cols"][a:b]] = c["vals"][a:b]
        return _checked((text, 1, str(c["key14"][i]), None, str(c["formula"][i]), self._encode(fp)))

    def _encode(self, fp):
        return encode_compact(fp, self.fingerprinter.binary)

    def _decode(self, blobs, compact=False):
        """Float32 rows, or with ``compact`` the stored uint8 values as float32 row blocks."""
        n, binary = self.fingerprinter.n_features, self.fingerprinter.binary
        where = f"Candidate store {self.label}"
        if not compact:
            return decode_compact(blobs, n, binary, where)
        values = decode_compact(blobs, n, binary, where, dtype=np.uint8)
        return PackedBinaryFeatures.from_dense(values) if binary else CountFeatures(values)

    def _select(self, where, args, order=""):
        """Whole rows of the structures table (``STORE_ROW``) matching ``where``, each verified."""
        rows = self.db.execute(f"SELECT {', '.join(STORE_ROW)} FROM structures WHERE {where} {order}",
                               args).fetchall()
        check_rows(rows, f"Candidate store {self.label}")
        return rows

    @_store_errors
    def add(self, structures):
        """Parse and fingerprint the structures not stored yet.

        Parameters
        ----------
        structures : iterable of str
            InChI or SMILES texts (other values are skipped); texts RDKit rejects are stored as rejected.
        """
        unique = list(dict.fromkeys(s for s in structures if isinstance(s, str)))
        known = set()
        for start in range(0, len(unique), 900):
            chunk = unique[start:start + 900]
            q = f"SELECT text FROM structures WHERE text IN ({','.join('?' * len(chunk))})"
            known.update(r[0] for r in self.db.execute(q, chunk))
        rows = []
        for s in unique:
            if s in known:
                continue
            # A cache written before parents existed holds salts whole: only single neutral unlabelled texts use it.
            cached = None if may_need_parent(s) else self._from_cache(s)
            if cached is not None:
                rows.append(cached)
                continue
            parent = parent_of(s)
            if parent is None:
                rows.append(_checked((s, 0, None, None, None, None)))
                continue
            fp, _ = self.fingerprinter.transform([parent.mol])
            rows.append(_checked((s, 1, parent.key[:14], parent.key, parent.formula, self._encode(fp[0]))))
        self.n_computed += sum(1 for r in rows if r[3] is not None or not r[1])
        self.db.executemany(f"INSERT OR REPLACE INTO structures ({', '.join(STORE_ROW)}) VALUES "
                            f"({', '.join('?' * len(STORE_ROW))})", rows)
        self.db.commit()

    @_store_errors
    def _fetch(self, structures, columns):
        self.add(structures)
        found = {}
        texts = [s for s in structures if isinstance(s, str)]
        for start in range(0, len(texts), 900):
            chunk = texts[start:start + 900]
            for row in self._select(f"text IN ({','.join('?' * len(chunk))})", chunk):
                found[row[0]] = tuple(row[STORE_ROW.index(c)] for c in columns)
        return [found.get(s) if isinstance(s, str) else None for s in structures]

    def keys_for(self, structures):
        """Return the first InChIKey block and the parse status of each structure (parsed first when new).

        Parameters
        ----------
        structures : sequence of str or None
            InChI or SMILES texts (None for a row without a structure).

        Returns
        -------
        keys : list of str or None
            First InChIKey block of each structure's parent; None when RDKit rejects it.
        ok : ndarray of bool, shape (n_structures,)
            Whether each structure was parsed.
        """
        rows = self._fetch(structures, ("ok", "key14"))
        ok = np.array([bool(r and r[0]) for r in rows], dtype=bool)
        return [r[1] if r and r[0] else None for r in rows], ok

    def formula_of(self, structure):
        """Return the formula of one structure's parent (see :meth:`formulas_for`).

        Parameters
        ----------
        structure : str
            InChI or SMILES text.

        Returns
        -------
        formula : str or None
            None when RDKit rejects the structure.
        """
        rows = self._fetch([structure], ("formula",))
        return rows[0][0] if rows[0] else None

    def formulas_for(self, structures):
        """Return the formula of each structure's parent.

        Parameters
        ----------
        structures : sequence of str or None
            InChI or SMILES texts; new ones are parsed and stored first.

        Returns
        -------
        formulas : list of str or None
            Formula of each parent (:func:`~._structures.parent_of`: salts reduced, labelled atoms apart,
            ``C4H8D3N5``); None when RDKit rejects the structure.
        """
        rows = self._fetch(structures, ("ok", "formula"))
        return [r[1] if r and r[0] else None for r in rows]

    def fingerprints(self, structures, compact=False):
        """Return the fingerprint of each structure.

        Parameters
        ----------
        structures : sequence of str or None
            InChI or SMILES texts; new ones are parsed, fingerprinted and stored first.
        compact : bool, default=False
            Return the stored bytes, read as float32 row blocks, for candidate pools a quarter of the float32
            size or less.

        Returns
        -------
        fingerprints : ndarray of float32, CountFeatures or PackedBinaryFeatures of shape (n_structures, n_features)
            One row per structure, zeros for structures RDKit rejects; row blocks with ``compact``.
        """
        rows = self._fetch(structures, ("ok", "fp"))
        n = self.fingerprinter.n_features
        blobs = [r[1] if r and r[0] else self._encode(np.zeros(n, dtype=np.float32)) for r in rows]
        return self._decode(blobs, compact=compact)

    @_store_errors
    def by_formula(self, formula):
        """Return the stored structures of a formula, one per first InChIKey block.

        Parameters
        ----------
        formula : str
            Molecular formula (as :meth:`formulas_for` gives it).

        Returns
        -------
        keys : list of str
            First InChIKey blocks, sorted.
        texts : list of str
            The first input text (in sort order) of each key.
        fingerprints : ndarray of float32, shape (n_keys, n_features)
            Their fingerprints.
        """
        found = self._select("formula = ? AND ok = 1", (formula,), "ORDER BY key14, text")
        strays = [r[0] for r in found if r[4] != formula or r[1] != 1]  # brought by a damaged index entry
        if strays:
            raise IOKRDataError(f"Candidate store {self.label} is damaged: its formula index lists {strays[0]!r} "
                                f"under {formula}; delete it to rebuild the cache.")
        rows = [(r[2], r[0], r[5]) for r in found]
        seen, keep = set(), []
        for r in rows:
            if r[0] not in seen:
                seen.add(r[0])
                keep.append(r)
        return [r[0] for r in keep], [r[1] for r in keep], self._decode([r[2] for r in keep])

    @_store_errors
    def formulas(self):
        """Return the distinct formulas of the parsed structures stored.

        Returns
        -------
        formulas : list of str
            In no particular order.
        """
        return [r[0] for r in self.db.execute("SELECT DISTINCT formula FROM structures WHERE ok = 1")]

    @_store_errors
    def __len__(self):
        return self.db.execute("SELECT COUNT(*) FROM structures").fetchone()[0]

    def close(self):
        """Close the SQLite connection (a temporary store's file is deleted)."""
        self.db.close()


def _checked(values):
    """A store row with its checksum appended (:data:`STORE_ROW` order)."""
    return (*values, row_checksum(values))
