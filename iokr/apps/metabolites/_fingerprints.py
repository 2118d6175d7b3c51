"""Molecular fingerprints from SMILES or InChI with RDKit: Morgan counts and bits, MACCS, and combinations.

Structures RDKit rejects are reported (``None`` rows and a count), never silently dropped.
"""

from __future__ import annotations

import numpy as np

from ...decoding import PackedBinaryFeatures

FINGERPRINTS = ("morgan_counts", "morgan_bits", "maccs", "morgan_counts+maccs", "morgan_bits+maccs")


def _rdkit():
    try:
        from rdkit import Chem, RDLogger
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("Fingerprints need RDKit: pip install 'iokr[chem]'.") from None
    RDLogger.DisableLog("rdApp.*")
    return Chem


def parse_structure(text):
    """RDKit molecule from an InChI (``InChI=...``) or a SMILES string; ``None`` when RDKit rejects it."""
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
    """Full InChIKey of an RDKit molecule (``None`` on failure)."""
    Chem = _rdkit()
    try:
        key = Chem.MolToInchiKey(mol)
    except Exception:  # noqa: BLE001
        return None
    return key or None


def molecular_formula(mol):
    from rdkit.Chem.rdMolDescriptors import CalcMolFormula

    return CalcMolFormula(mol)


class Fingerprinter:
    """Compute fixed-length fingerprints of molecules.

    Parameters
    ----------
    kind : {"morgan_counts", "morgan_bits", "maccs", "morgan_counts+maccs", "morgan_bits+maccs"}
    n_bits : int, default=2048
        Length of the folded Morgan fingerprint.
    radius : int, default=2
        Morgan radius (2 is ECFP4).

    Attributes
    ----------
    n_features : int
    binary : bool
        Whether every feature is 0/1 (then :meth:`pack` stores 8 features per byte).
    """

    def __init__(self, kind="morgan_counts+maccs", n_bits=2048, radius=2):
        if kind not in FINGERPRINTS:
            raise ValueError(f"The 'kind' parameter of Fingerprinter must be one of {FINGERPRINTS}. Got {kind!r}.")
        if not isinstance(n_bits, (int, np.integer)) or n_bits < 8:
            raise ValueError(f"The 'n_bits' parameter of Fingerprinter must be an int >= 8. Got {n_bits!r}.")
        self.kind, self.n_bits, self.radius = kind, int(n_bits), int(radius)
        parts = kind.split("+")
        self.n_features = sum(self.n_bits if p.startswith("morgan") else 167 for p in parts)
        self.binary = "morgan_counts" not in parts

    def params(self):
        return {"kind": self.kind, "n_bits": self.n_bits, "radius": self.radius}

    def _one(self, mol, out):
        from rdkit.Chem import MACCSkeys, rdFingerprintGenerator

        if not hasattr(self, "_generator"):
            self._generator = rdFingerprintGenerator.GetMorganGenerator(radius=self.radius, fpSize=self.n_bits)
        col = 0
        for part in self.kind.split("+"):
            if part == "morgan_counts":
                out[col:col + self.n_bits] = self._generator.GetCountFingerprintAsNumPy(mol)
                col += self.n_bits
            elif part == "morgan_bits":
                out[col:col + self.n_bits] = self._generator.GetFingerprintAsNumPy(mol)
                col += self.n_bits
            else:
                fp = MACCSkeys.GenMACCSKeys(mol)
                out[col:col + 167] = np.frombuffer(fp.ToBitString().encode(), dtype=np.uint8) - ord("0")
                col += 167

    def transform(self, structures):
        """Fingerprints of SMILES/InChI strings or RDKit molecules.

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
        """Bit-packed storage of binary fingerprints (a :class:`~iokr.decoding.PackedBinaryFeatures`)."""
        if not self.binary:
            raise ValueError(f"Fingerprint kind {self.kind!r} holds counts; only binary kinds can be bit-packed.")
        return PackedBinaryFeatures.from_dense(np.asarray(F) > 0)
