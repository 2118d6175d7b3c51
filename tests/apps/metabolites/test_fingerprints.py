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
    from rdkit import Chem
    from rdkit.Chem import rdFingerprintGenerator

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
