import numpy as np
import pytest

from iokr.apps.metabolites import Fingerprinter

ETHANOL_SMILES, ETHANOL_INCHI = "CCO", "InChI=1S/C2H6O/c1-2-3/h3H,2H2,1H3"


@pytest.mark.parametrize("kind", ["morgan_counts", "morgan_bits", "maccs", "morgan_counts+maccs"])
def test_smiles_and_inchi_agree_and_bad_structures_flagged(kind):
    f = Fingerprinter(kind, n_bits=256)
    F, ok = f.transform([ETHANOL_SMILES, ETHANOL_INCHI, "C1CC", "InChI=1S/garbage", None])
    assert F.shape == (5, f.n_features)
    np.testing.assert_array_equal(ok, [True, True, False, False, False])
    np.testing.assert_array_equal(F[0], F[1])
    assert F[0].sum() > 0 and np.all(F[2:] == 0)


def test_morgan_counts_match_rdkit_reference():
    from rdkit import Chem  # noqa: PLC0415 - optional chem extra, after importorskip
    from rdkit.Chem import rdFingerprintGenerator  # noqa: PLC0415 - optional chem extra, after importorskip

    mol = Chem.MolFromSmiles("CC(=O)Oc1ccccc1C(=O)O")
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=512)
    ref = np.zeros(512)
    for idx, count in gen.GetCountFingerprint(mol).GetNonzeroElements().items():
        ref[idx] = count
    F, _ = Fingerprinter("morgan_counts", n_bits=512).transform(["CC(=O)Oc1ccccc1C(=O)O"])
    np.testing.assert_array_equal(F[0], ref)
    bits, _ = Fingerprinter("morgan_bits", n_bits=512).transform(["CC(=O)Oc1ccccc1C(=O)O"])
    np.testing.assert_array_equal(bits[0], ref > 0)


def test_bit_packing_roundtrip_and_counts_refused():
    f = Fingerprinter("morgan_bits+maccs", n_bits=64)
    F, _ = f.transform(["CCO", "c1ccccc1O", "CCN"])
    packed = f.pack(F)
    assert packed.packed.nbytes == 3 * ((64 + 167 + 7) // 8)
    np.testing.assert_array_equal(packed[0:3], F)
    with pytest.raises(ValueError, match="counts"):
        Fingerprinter("morgan_counts").pack(F)
    with pytest.raises(ValueError, match="kind"):
        Fingerprinter("ecfp")


def _rdkit_reference(part, mol, n_bits, radius):
    """The part computed directly with RDKit's generators and sparse count vectors (folded by RDKit)."""
    from rdkit.Chem import MACCSkeys, rdFingerprintGenerator  # noqa: PLC0415 - optional chem extra, after importorskip

    if part == "maccs":
        return np.array(list(MACCSkeys.GenMACCSKeys(mol)), dtype=np.float64)
    name, form = part.split("_")
    generator = {
        "morgan": lambda: rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits),
        "fcfp": lambda: rdFingerprintGenerator.GetMorganGenerator(
            radius=radius, fpSize=n_bits, atomInvariantsGenerator=rdFingerprintGenerator.GetMorganFeatureAtomInvGen()),
        "rdkit": lambda: rdFingerprintGenerator.GetRDKitFPGenerator(fpSize=n_bits),
        "atompair": lambda: rdFingerprintGenerator.GetAtomPairGenerator(fpSize=n_bits),
        "torsion": lambda: rdFingerprintGenerator.GetTopologicalTorsionGenerator(fpSize=n_bits),
    }[name]()
    ref = np.zeros(n_bits)
    if form == "bits":  # RDKit's bit vectors (atom pairs and torsions: with RDKit's default count simulation)
        ref[list(generator.GetFingerprint(mol).GetOnBits())] = 1.0
        return ref
    for idx, count in generator.GetCountFingerprint(mol).GetNonzeroElements().items():
        ref[idx] = count
    return ref


@pytest.mark.parametrize("kind", ["fcfp_counts", "rdkit_bits", "rdkit_counts", "atompair_counts", "torsion_counts",
                                  "morgan_counts+fcfp_bits+maccs", "atompair_bits+torsion_bits+morgan_bits"])
@pytest.mark.parametrize("radius", [1, 3])
def test_parts_are_concatenated_rdkit_fingerprints(kind, radius):
    from rdkit import Chem  # noqa: PLC0415 - optional chem extra, after importorskip

    smiles = ["CC(=O)Oc1ccccc1C(=O)O", "CN1C=NC2=C1C(=O)N(C(=O)N2C)C", "OC[C@H]1OC(O)[C@H](O)[C@@H](O)[C@@H]1O"]
    f = Fingerprinter(kind, n_bits=256, radius=radius)
    F, ok = f.transform(smiles)
    assert ok.all() and F.shape == (3, f.n_features)
    for i, s in enumerate(smiles):
        mol = Chem.MolFromSmiles(s)
        ref = np.concatenate([_rdkit_reference(p, mol, 256, radius) for p in kind.split("+")])
        np.testing.assert_array_equal(F[i], ref)
    assert f.binary == ("counts" not in kind)
    if f.binary:
        np.testing.assert_array_equal(f.pack(F)[0:3], F)


@pytest.mark.parametrize("kind", ["maccs+maccs", "morgan_counts+", "ecfp4", "", None])
def test_bad_kinds_name_the_parameter(kind):
    with pytest.raises(ValueError, match="'kind'"):
        Fingerprinter(kind)


def test_bad_radius_names_the_parameter():
    with pytest.raises(ValueError, match="'radius'"):
        Fingerprinter("morgan_counts", radius=0)
