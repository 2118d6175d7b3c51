"""Molecular fingerprints from SMILES or InChI with RDKit: Morgan counts and bits, MACCS, and combinations.

Structures RDKit rejects are reported (``None`` rows and a count), never silently dropped.
"""

from __future__ import annotations

import numpy as np

from ....decoding import PackedBinaryFeatures

#: Fingerprint parts; a kind joins parts with "+" (their columns concatenated in that order).
#: ``morgan`` is ECFP (radius ``radius``), ``fcfp`` Morgan on pharmacophoric atom features, ``rdkit`` RDKit's
#: path-based topological fingerprint (paths of 1-7 bonds), ``atompair`` atom pairs, ``torsion`` topological
#: torsions; each folded to ``n_bits`` as counts or as RDKit's bit vector (for atom pairs and torsions RDKit's
#: bit vectors simulate counts with several bits per feature). ``maccs``: the 167 MACCS keys.
FINGERPRINT_PARTS = tuple(f"{name}_{form}" for name in ("morgan", "fcfp", "rdkit", "atompair", "torsion")
                          for form in ("counts", "bits")) + ("maccs",)
#: Common kinds (any "+"-combination of :data:`FINGERPRINT_PARTS` is accepted).
FINGERPRINTS = ("morgan_counts", "morgan_bits", "maccs", "morgan_counts+maccs", "morgan_bits+maccs")


def _rdkit():
    """RDKit's ``Chem`` module, its log silenced once per process (the import and the silencing cost 7 us a call,
    paid three times per indexed row before this was cached)."""
    Chem = getattr(_rdkit, "chem", None)
    if Chem is None:
        try:
            from rdkit import Chem, RDLogger  # noqa: PLC0415 - rdkit is an optional dependency
        except ImportError:  # pragma: no cover - depends on the environment
            raise ImportError("Fingerprints need RDKit: pip install 'iokr[chem]'.") from None
        RDLogger.DisableLog("rdApp.*")
        _rdkit.chem = Chem
    return Chem


def parse_structure(text):
    """Parse an InChI (``InChI=...``) or a SMILES string into an RDKit molecule.

    Parameters
    ----------
    text : str
        InChI or SMILES; surrounding whitespace is ignored.

    Returns
    -------
    mol : rdkit.Chem.Mol or None
        None when ``text`` is no text, blank, or rejected by RDKit.
    """
    Chem = _rdkit()
    if not isinstance(text, str) or not text.strip():
        return None
    text = text.strip()
    try:
        mol = Chem.MolFromInchi(text, sanitize=True) if text.startswith("InChI=") else Chem.MolFromSmiles(text)
    except Exception:  # noqa: BLE001 - RDKit raises assorted errors on garbage
        return None
    return mol


def inchikey(mol):
    """Compute the full InChIKey of an RDKit molecule.

    Parameters
    ----------
    mol : rdkit.Chem.Mol
        The molecule.

    Returns
    -------
    key : str or None
        The 27-character InChIKey; None when RDKit cannot compute one.
    """
    Chem = _rdkit()
    try:
        key = Chem.MolToInchiKey(mol)
    except Exception:  # noqa: BLE001
        return None
    return key or None


def inchikey_of_inchi(text):
    """Full InChIKey of an InChI string straight from its text (no molecule built); ``None`` on failure."""
    Chem = _rdkit()
    try:
        return Chem.InchiToInchiKey(text) or None
    except Exception:  # noqa: BLE001 - RDKit raises assorted errors on garbage
        return None


def molecular_formula(mol):
    from rdkit.Chem.rdMolDescriptors import CalcMolFormula  # noqa: PLC0415 - rdkit is an optional dependency

    return CalcMolFormula(mol)


def _generator(name, n_bits, radius):
    from rdkit.Chem import rdFingerprintGenerator as gen  # noqa: PLC0415 - rdkit is an optional dependency

    if name == "morgan":
        return gen.GetMorganGenerator(radius=radius, fpSize=n_bits)
    if name == "fcfp":
        return gen.GetMorganGenerator(radius=radius, fpSize=n_bits,
                                      atomInvariantsGenerator=gen.GetMorganFeatureAtomInvGen())
    if name == "rdkit":
        return gen.GetRDKitFPGenerator(fpSize=n_bits)
    if name == "atompair":
        return gen.GetAtomPairGenerator(fpSize=n_bits)
    return gen.GetTopologicalTorsionGenerator(fpSize=n_bits)


class Fingerprinter:
    """Compute fixed-length fingerprints of molecules.

    Parameters
    ----------
    kind : str, default="morgan_counts+maccs"
        One part of :data:`FINGERPRINT_PARTS` or several joined by ``"+"`` (columns concatenated in that order),
        e.g. ``"morgan_counts"``, ``"morgan_counts+maccs"``, ``"fcfp_counts+atompair_counts+maccs"``.
    n_bits : int, default=2048
        Length of every folded part (all parts but MACCS).
    radius : int, default=2
        Radius of the Morgan and FCFP parts (2 is ECFP4).

    Attributes
    ----------
    n_features : int
    binary : bool
        Whether every feature is 0/1 (then :meth:`pack` stores 8 features per byte).
    """

    def __init__(self, kind="morgan_counts+maccs", n_bits=2048, radius=2):
        parts = kind.split("+") if isinstance(kind, str) else []
        if not parts or any(p not in FINGERPRINT_PARTS for p in parts) or len(set(parts)) != len(parts):
            raise ValueError(f"The 'kind' parameter of Fingerprinter must be distinct parts from "
                             f"{FINGERPRINT_PARTS} joined by '+'. Got {kind!r}.")
        if not isinstance(n_bits, (int, np.integer)) or n_bits < 8:
            raise ValueError(f"The 'n_bits' parameter of Fingerprinter must be an int >= 8. Got {n_bits!r}.")
        if not isinstance(radius, (int, np.integer)) or radius < 1:
            raise ValueError(f"The 'radius' parameter of Fingerprinter must be an int >= 1. Got {radius!r}.")
        self.kind, self.n_bits, self.radius = kind, int(n_bits), int(radius)
        self._parts = parts
        self.n_features = sum(167 if p == "maccs" else self.n_bits for p in parts)
        self.binary = not any(p.endswith("_counts") for p in parts)

    def params(self):
        """Return the settings, as model files and structure databases store them.

        Returns
        -------
        params : dict
            ``kind``, ``n_bits`` and ``radius``: ``Fingerprinter(**params)`` computes the same fingerprints.
        """
        return {"kind": self.kind, "n_bits": self.n_bits, "radius": self.radius}

    def _one(self, mol, out):
        from rdkit.Chem import MACCSkeys  # noqa: PLC0415 - rdkit is an optional dependency

        col = 0
        for part in self._parts:
            if part == "maccs":
                fp = MACCSkeys.GenMACCSKeys(mol)
                out[col:col + 167] = np.frombuffer(fp.ToBitString().encode(), dtype=np.uint8) - ord("0")
                col += 167
                continue
            name, form = part.split("_")
            generator = self._generator(name)
            if form == "counts":
                out[col:col + self.n_bits] = generator.GetCountFingerprintAsNumPy(mol)
            else:
                out[col:col + self.n_bits] = generator.GetFingerprintAsNumPy(mol)
            col += self.n_bits

    def _generator(self, name):
        if not hasattr(self, "_generators"):
            self._generators = {}
        if name not in self._generators:
            self._generators[name] = _generator(name, self.n_bits, self.radius)
        return self._generators[name]

    def transform(self, structures):
        """Compute the fingerprints of SMILES/InChI strings or RDKit molecules.

        Parameters
        ----------
        structures : sequence of str, rdkit.Chem.Mol or None
            Structures, parsed with :func:`parse_structure` when given as text.

        Returns
        -------
        F : ndarray of shape (n, n_features), float32
            Rows of structures RDKit rejects are zero.
        ok : ndarray of bool, shape (n,)
            False for rejected structures.
        """
        F = np.zeros((len(structures), self.n_features), dtype=np.float32)
        ok = np.zeros(len(structures), dtype=bool)
        for i, s in enumerate(structures):
            mol = s if (s is not None and not isinstance(s, str)) else parse_structure(s)
            if mol is None:
                continue
            self._one(mol, F[i])
            ok[i] = True
        return F, ok

    def pack(self, F):
        """Pack binary fingerprints into 8 features per byte.

        Parameters
        ----------
        F : array-like of shape (n, n_features)
            Fingerprints of this (binary) kind; nonzero entries are 1.

        Returns
        -------
        packed : PackedBinaryFeatures
            The same rows, bit-packed.

        Raises
        ------
        ValueError
            When the kind holds counts.
        """
        if not self.binary:
            raise ValueError(f"Fingerprint kind {self.kind!r} holds counts; only binary kinds can be bit-packed.")
        return PackedBinaryFeatures.from_dense(np.asarray(F) > 0)
