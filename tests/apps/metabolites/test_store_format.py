"""Compact fingerprint rows and row checksums (:mod:`iokr.apps.metabolites.candidates._store_format`) against dense
references: fresh RDKit fingerprints and a per-row brute-force decoder."""

import numpy as np
import pytest

from iokr.apps.metabolites import Fingerprinter
from iokr.apps.metabolites.candidates._store_format import (
    BITMAP,
    SPARSE,
    _structure_row_checksum,
    check_rows,
    decode_compact,
    encode_compact,
    row_checksum,
    stored_values,
)
from iokr.exceptions import IOKRDataError


def _decode_one(blob, n_features, binary):
    """Brute-force reference decoder: one row, one column at a time."""
    out = np.zeros(n_features, dtype=np.float32)
    tag, payload = blob[0], blob[1:]
    if tag == SPARSE:
        nnz = len(payload) // (2 if binary else 3)
        for k in range(nnz):
            column = payload[2 * k] + 256 * payload[2 * k + 1]
            out[column] = 1 if binary else payload[2 * nnz + k]
        return out
    width = (n_features + 7) // 8
    k = 0
    for column in range(n_features):
        if payload[column // 8] >> (7 - column % 8) & 1:
            out[column] = 1 if binary else payload[width + k]
            k += 1
    return out


def _random_rows(rng, n, n_features, density, binary):
    dense = (rng.random((n, n_features)) < density) * rng.integers(1, 400, size=(n, n_features))
    return (dense > 0).astype(np.float32) if binary else dense.astype(np.float32)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("density", [0.0, 0.01, 0.2, 0.9])
@pytest.mark.parametrize("n_features", [8, 13, 167, 2215])
def test_round_trip_equals_the_stored_values_and_the_reference_decoder(binary, density, n_features):
    rng = np.random.default_rng(n_features)
    F = _random_rows(rng, 40, n_features, density, binary)
    F[0] = 0  # an empty row
    blobs = [encode_compact(row, binary) for row in F]
    decoded = decode_compact(blobs, n_features, binary, "test")
    expected = stored_values(F, binary).astype(np.float32)  # counts clipped at 255, as format 2 stored them
    np.testing.assert_array_equal(decoded, expected)
    np.testing.assert_array_equal(decoded, np.array([_decode_one(b, n_features, binary) for b in blobs]))
    np.testing.assert_array_equal(decode_compact(blobs, n_features, binary, "test", dtype=np.uint8), expected)
    # each row takes the smaller layout
    for row, blob in zip(stored_values(F, binary), blobs, strict=True):
        nnz = np.count_nonzero(row)
        sparse, bitmap = 2 * nnz, (n_features + 7) // 8
        assert len(blob) == 1 + min(sparse, bitmap) + (0 if binary else nnz)
        assert blob[0] == (SPARSE if sparse < bitmap else BITMAP)


@pytest.mark.parametrize("kind", ["morgan_counts+maccs", "morgan_bits", "maccs", "fcfp_counts+atompair_bits"])
def test_decoded_fingerprints_are_the_fresh_ones_bit_for_bit(kind):
    pytest.importorskip("rdkit")
    fingerprinter = Fingerprinter(kind)
    smiles = ["CCO", "c1ccccc1O", "CC(=O)Oc1ccccc1C(=O)O", "C" * 300, "CN1C=NC2=C1C(=O)N(C(=O)N2C)C",
              "OC[C@H]1OC(O)[C@H](O)[C@@H](O)[C@@H]1O", "[Na+].[Cl-]"]
    F, ok = fingerprinter.transform(smiles)
    assert ok.all() and (fingerprinter.binary or F.max() > 255)  # a long chain's counts are clipped, as before
    blobs = [encode_compact(row, fingerprinter.binary) for row in F]
    decoded = decode_compact(blobs, fingerprinter.n_features, fingerprinter.binary, "test")
    np.testing.assert_array_equal(decoded, stored_values(F, fingerprinter.binary))
    small = F.max(axis=1) <= 255
    np.testing.assert_array_equal(decoded[small], F[small])  # below the clip: the fresh values exactly


@pytest.mark.parametrize("damage, message", [
    (lambda b: b[:-1], "cut short|out of order|nonzero"),
    (lambda b: bytes([7]) + b[1:], "unknown layout byte 7"),
    (lambda b: b[:1] + b"\xff\xff" + b[3:], "beyond"),
    (lambda b: b"", "not a non-empty byte string"),
])
def test_malformed_rows_name_the_file_and_the_row(damage, message):
    F = np.zeros((3, 100), dtype=np.float32)
    F[:, [3, 50, 70]] = [1, 2, 3]
    blobs = [encode_compact(row, False) for row in F]
    blobs[1] = damage(blobs[1])
    with pytest.raises(IOKRDataError, match=f"db.sqlite is damaged: row 42 holds a fingerprint that .*({message})"):
        decode_compact(blobs, 100, False, "db.sqlite", ids=np.array([41, 42, 43]))


def test_checksum_catches_every_single_byte_flip_and_a_change_of_type():
    row = (7, "ABCDEFGHIJKLMN-OPQRSTUVWX-N", "CCO", "C2H6O", 46.041865, b"\x00\x01\x02\x03", '["a", "b"]')
    crc = row_checksum(row)
    check_rows([(*row, crc)], "db")
    for position, value in enumerate(row):
        if isinstance(value, (str, bytes)):
            raw = value.encode() if isinstance(value, str) else value
            for i in range(len(raw)):
                flipped = bytearray(raw)
                flipped[i] ^= 0x10
                flipped = bytes(flipped)
                damaged = list(row)
                damaged[position] = flipped.decode("latin-1") if isinstance(value, str) else flipped
                assert row_checksum(damaged) != crc
    as_text = list(row)
    as_text[4] = "46.041865"  # a mass stored as text
    with pytest.raises(IOKRDataError, match=r"^db is damaged: row 7 .*checksum"):
        check_rows([(*as_text, crc)], "db")
    mass = list(row)
    mass[4] = float(np.nextafter(row[4], 100.0))  # the last bit of the mass
    assert row_checksum(mass) != crc


def test_the_structure_row_checksum_is_the_general_one():
    """check_rows's shortcut for rows of a structure's types gives the general loop's checksum for any row (brute
    force: row_checksum), of those types or not."""
    rng = np.random.default_rng(0)
    texts = ["", "CCO", "C2H6O", "\u00e9\u4e2d", "\udcff", '["a", "b"]']
    values = {int: [0, -1, 7, 2**62], str: texts, float: [0.0, -0.0, 46.041865, float("nan"), float("inf")],
              bytes: [b"", b"\x00\x01", bytes(range(256))], None: [None], bool: [True]}
    layout = (int, str, str, str, float, bytes, str)
    for _ in range(400):
        kinds = list(layout)
        if rng.random() < 0.4:  # another type somewhere, or another length
            kinds[int(rng.integers(0, 7))] = list(values)[int(rng.integers(0, len(values)))]
        if rng.random() < 0.1:
            kinds = kinds[:int(rng.integers(0, 8))] + ([str] if rng.random() < 0.5 else [])
        row = tuple(values[k][int(rng.integers(0, len(values[k])))] for k in kinds)
        try:
            expected = row_checksum(row)
        except TypeError:
            with pytest.raises(TypeError):
                _structure_row_checksum(row)
            continue
        assert _structure_row_checksum(row) == expected


@pytest.mark.parametrize("kind", ["morgan_counts+maccs", "maccs", "morgan_bits"])
def test_store_pools_read_compact_equal_the_float_rows(kind):
    pytest.importorskip("rdkit")
    from iokr.apps.metabolites import CandidateStore  # noqa: PLC0415 - after the rdkit check

    store = CandidateStore(":memory:", Fingerprinter(kind))
    texts = ["CCO", "c1ccccc1O", "not a smiles", "C" * 300]
    F = store.fingerprints(texts)
    np.testing.assert_array_equal(F, stored_values(Fingerprinter(kind).transform(texts)[0], store.fingerprinter.binary))
    pool = store.fingerprints(texts, compact=True)
    np.testing.assert_array_equal(pool[0:4], F)
