"""Building a sharded structure store (:mod:`._sharded_database`): in parallel, resumable, appendable.

A build runs in two phases, each leaving only complete files behind:

1. **parse**: the table is cut into chunks of ``chunk_rows`` rows; each chunk is parsed (RDKit: parent structure,
   InChIKey, formula, mass, fingerprint) in this process, local worker processes or on Dask
   (:mod:`._parse_executors`), and written as one part file ``build/part-<chunk>.sqlite`` (through a temporary
   name and a rename) holding every parsed row with its shard bin and its position in the input;
2. **merge**: per shard bin, the store's current rows of that bin (an append) and then the parts' rows of that bin,
   in input order, are written to ``generation-<G>/shard-<bin>.sqlite`` (again through a rename), a row whose
   parent's first InChIKey block and formula repeat an earlier row's being merged into it (the first kept, as in a
   single-file database). A formula fixes the mass and hence the bin, so duplicates always meet in one shard:
   merging per shard merges across the whole store.

The manifest is written last (atomically); only then does the store open, and the parts and the previous
generation are removed. A build killed at any point (``kill -9`` included) resumes when the same command is run
again: chunks with a part file and shards already merged are not redone; a half-built store never opens. A second
build into the same folder while one runs is refused (:func:`~iokr.io._ownership.claim`). The build plan (source
file, its size and modification time, fingerprint, chunk size) is recorded in ``build/plan.json``; a different
unfinished build is refused, not mixed in.

Memory: a few chunks in flight while parsing; while merging, one shard's (first InChIKey block, formula) pairs.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

from ....exceptions import IOKRDataError
from ....io import LegacyLines
from ....io._ownership import OutputInUseError, claim, release
from ....io._workers import worker_pool
from ..chemistry._fingerprints import Fingerprinter
from ..defaults import DEFAULT_SHARD_WIDTH, DEFAULT_STORE_CHUNK_ROWS
from ._database import _CREATE, _ROW, SCHEMA, VERSION, _meta_checksum
from ._parse_executors import check_scheduler, run_in_order
from ._sharded_database import (
    BUILD_FOLDER,
    MANIFEST,
    STORE_FORMAT,
    STORE_SCHEMA,
    ShardedStructureDatabase,
    bin_of,
    manifest_text,
    read_manifest,
)
from ._sqlite_files import connect_read_only, describe_error, error_kind, remove_with_journal
from ._store_format import MAX_FEATURES, check_rows, row_checksum
from ._structure_parsing import BUILD_COUNTS, FLAG_COUNTS, check_n_jobs, count_parse_result, parse_texts
from ._structure_tables import IDENTIFIER_COLUMNS, name_column, pick, read_structure_rows, structure_texts

_PART_CREATE = (
    "CREATE TABLE rows (ordinal INTEGER PRIMARY KEY, bin INTEGER NOT NULL, inchikey TEXT NOT NULL, "
    "smiles TEXT NOT NULL, formula TEXT NOT NULL, mass REAL NOT NULL, fp BLOB NOT NULL, columns TEXT NOT NULL)",
    "CREATE TABLE counts (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
)


def build_store(source, output, fingerprinter=None, *, append=False, n_jobs=None, scheduler=None,
                shard_width=DEFAULT_SHARD_WIDTH, chunk_rows=DEFAULT_STORE_CHUNK_ROWS, progress=None, on_shard=None):
    """Index ``source`` into the store folder ``output``: a new store, or (``append``) one more table of it.

    Parameters
    ----------
    source : str or Path
        CSV, TSV or SDF of structures (see :mod:`._database`).
    output : str or Path
        The store folder. An unfinished build of the same command there is resumed.
    fingerprinter : Fingerprinter, optional
        The fingerprints stored with each structure; ``Fingerprinter()`` (its defaults) when omitted.
    append : bool, default=False
        Add ``source`` to the existing store ``output`` (same fingerprint; its identifier and name columns, if
        any, named like the store's); without it an existing store is refused.
    n_jobs : int, optional
        Local worker processes (or Dask LocalCluster workers); default: the number of CPUs.
    scheduler : str, optional
        Dask scheduler address, or ``"local"`` for a LocalCluster of ``n_jobs`` processes.
    shard_width : float, default=DEFAULT_SHARD_WIDTH
        Daltons per shard (a new store only; an append keeps the store's).
    chunk_rows : int, default=DEFAULT_STORE_CHUNK_ROWS
        Rows per chunk: one parse task, and one part a resumed build keeps.
    progress : callable, optional
        ``progress(rows read)`` after every chunk (resumed chunks included).
    on_shard : callable, optional
        ``on_shard(info)`` once per shard written, ``info`` a dict ``bin``, ``low``, ``high``, ``n_structures``,
        ``done`` (shards so far), ``total``.

    Returns
    -------
    store : ShardedStructureDatabase
        The store written, open for reading.
    stats : dict
        As :meth:`StructureDatabase.build` (``n_structures``: the structures this table added), plus
        ``n_store_structures`` (the store's), ``n_chunks``, ``n_chunks_resumed``, ``n_shards``, ``bytes``,
        ``seconds_parse`` (reading and parsing) and ``seconds_merge`` (writing the shards).
    """
    output = Path(output)
    fingerprinter = Fingerprinter() if fingerprinter is None else fingerprinter
    if fingerprinter.n_features > MAX_FEATURES:
        raise IOKRDataError(f"Structure store {output}: fingerprints of {fingerprinter.n_features} columns do not "
                            f"fit the compact format (at most {MAX_FEATURES}).")
    if output.exists() and not output.is_dir():
        raise IOKRDataError(f"Structure store {output} is a file; a sharded store is a folder (a path ending in "
                            ".sqlite writes a single-file database).")
    check_scheduler(scheduler)
    check_n_jobs(n_jobs, "build_store")
    try:
        claim(output)
    except OutputInUseError as exc:
        who = f"pid {exc.pid}" if exc.pid is not None else "another process"
        raise IOKRDataError(f"Structure store {output} is being built by another iokr run ({who}); wait for it to "
                            "finish (two builds never write one store at once).") from None
    try:
        return _build_claimed(source, output, fingerprinter, append, n_jobs, scheduler, shard_width, chunk_rows,
                              progress, on_shard)
    except (sqlite3.Error, OSError) as exc:
        if error_kind(exc) in ("full", "locked", "damaged"):  # the parts and shards written so far are kept
            raise describe_error(exc, "Structure store", output, "writing", remedy="delete it and build it again") \
                from None
        raise
    finally:
        release(output)


def _plan(source, output, fingerprinter, append, shard_width, chunk_rows, columns):
    """The build plan (``plan.json``) and the store's previous manifest (None for a new store)."""
    old = read_manifest(output) if output.is_dir() else None
    if old is not None and not append:
        raise IOKRDataError(f"Structure store {output} exists ({old['n_structures']} structures); add a table with "
                            "--append, or give a new folder (--overwrite never deletes a store, which may hold hours "
                            "of indexing: delete the folder yourself to rebuild it).")
    if old is not None and old["fingerprint"] != fingerprinter.params():
        raise IOKRDataError(f"Structure store {output} holds fingerprints {old['fingerprint']}, not "
                            f"{fingerprinter.params()}; index this table into another store.")
    named = {"identifier_column": pick(columns, IDENTIFIER_COLUMNS), "name_column": name_column(columns)}
    if old is not None:
        for key, value in named.items():
            if old[key] != value:
                raise IOKRDataError(f"{source}: its {key.split('_')[0]} column is {_column_text(value)}, the store "
                                    f"{output}'s is {_column_text(old[key])}; rename the column so both tables name "
                                    "it alike.")
    old_columns = old["columns"] if old else []
    info = Path(source).stat()
    plan = {"source": Path(source).name, "source_bytes": info.st_size, "source_mtime_ns": info.st_mtime_ns,
            "fingerprint": fingerprinter.params(), "chunk_rows": int(chunk_rows),
            "generation": old["generation"] + 1 if old else 1, "row_offset": old["n_rows"] if old else 0,
            "shard_width": old["shard_width"] if old else float(shard_width),
            "columns": old_columns + [c for c in columns if c not in old_columns], **named}
    return plan, old


def _column_text(column):
    return repr(column) if column else "none (the table has no such column)"


def _start_or_resume(output, plan, old):
    """Create ``build/`` with ``plan``, or resume the unfinished build of the same plan found there."""
    build = output / BUILD_FOLDER
    try:
        found = json.loads((build / "plan.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        found = None
    except (OSError, ValueError):
        found = {}  # a plan cut short by a kill before its rename cannot be: plan.json is renamed into place
    if found is not None and found != plan:
        if found.get("generation", 0) > (old["generation"] if old else 0):
            raise IOKRDataError(f"Structure store {output} holds an unfinished build of {found.get('source')!r} "
                                "(another table or options); run that command again to finish it, or delete "
                                f"{build} to drop it.")
        found = None  # left behind by a build whose manifest was written: swept
    if found is None:
        shutil.rmtree(build, ignore_errors=True)
        build.mkdir(parents=True)
        _write_atomically(build / "plan.json", json.dumps(plan, sort_keys=True, indent=1) + "\n")
    for stale in build.glob("*.tmp*"):  # a part being written when the build was killed
        stale.unlink()
    return build


def _build_claimed(source, output, fingerprinter, append, n_jobs, scheduler, shard_width, chunk_rows, progress,
                   on_shard):
    t0 = time.perf_counter()
    legacy = LegacyLines()
    columns, rows, structure_columns = read_structure_rows(source, on_legacy=legacy)
    plan, old = _plan(source, output, fingerprinter, append, shard_width, chunk_rows, columns)
    new_folder = not output.exists()
    fresh = not (output / BUILD_FOLDER / "plan.json").exists()
    build = _start_or_resume(output, plan, old)
    done = {int(p.name[5:13]) for p in build.glob("part-*.sqlite")}

    def tasks():
        chunks = iter(lambda: list(itertools.islice(rows, chunk_rows)), [])
        read = 0
        for index, chunk in enumerate(chunks):
            read += len(chunk)
            if index in done:
                if progress is not None:
                    progress(read)
                continue
            first = plan["row_offset"] + index * plan["chunk_rows"] + 1
            yield index, read, (chunk, structure_columns, plan["columns"], fingerprinter.params(), first,
                                plan["shard_width"])

    n_chunks = len(done)
    try:
        for index, read, (part_rows, counts) in run_in_order(tasks(), _part_rows, n_jobs, scheduler):
            _write_part(build, index, part_rows, counts)
            n_chunks += 1
            if progress is not None:
                progress(read)
    except BaseException:
        if fresh and not any(build.glob("part-*.sqlite")):
            # nothing was parsed (no scheduler answered, an interrupt at once): leave no "unfinished build" that
            # would refuse the next table, and no folder this run made
            shutil.rmtree(build, ignore_errors=True)
            if new_folder and not any(output.iterdir()):
                output.rmdir()
        raise
    parse_s = time.perf_counter() - t0
    counts = dict.fromkeys(BUILD_COUNTS, 0)
    parts = sorted(build.glob("part-*.sqlite"))
    bins = set()
    for part in parts:
        with _closing(connect_read_only(part)) as connection:
            for key, value in connection.execute("SELECT key, value FROM counts"):
                counts[key] += value
            bins.update(b for b, in connection.execute("SELECT DISTINCT bin FROM rows"))
    shards = _merge_all(output, plan, old, parts, bins, n_jobs, on_shard)
    n_structures = sum(s["n_structures"] for s in shards)
    parsed_rows = counts["n_rows"] - counts["n_missing"] - counts["n_unparsable"]
    counts["n_duplicates"] = (old["n_structures"] if old else 0) + parsed_rows - n_structures
    table = {"source": plan["source"], "first_row": plan["row_offset"] + 1, **counts}
    manifest = {"schema": STORE_SCHEMA, "format": STORE_FORMAT, "generation": plan["generation"],
                "fingerprint": plan["fingerprint"], "columns": plan["columns"], "shard_width": plan["shard_width"],
                "identifier_column": plan["identifier_column"], "name_column": plan["name_column"],
                "shards": shards, "tables": (old["tables"] if old else []) + [table],
                "n_rows": plan["row_offset"] + counts["n_rows"], "n_structures": n_structures}
    _write_atomically(output / MANIFEST, manifest_text(manifest))  # the store now exists, whole
    current = f"generation-{plan['generation']}"
    for folder in output.glob("generation-*"):
        if folder.name != current:
            shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(build, ignore_errors=True)
    seconds = time.perf_counter() - t0
    stats = {**counts, "n_structures": n_structures - (old["n_structures"] if old else 0),
             "n_store_structures": n_structures,
             "n_chunks": n_chunks, "n_chunks_resumed": len(done), "n_shards": len(shards),
             "bytes": sum(s["bytes"] for s in shards), "windows_1252_lines": legacy.note(), "seconds": seconds,
             "seconds_parse": parse_s, "seconds_merge": seconds - parse_s,
             "structures_per_s": counts["n_rows"] / max(seconds, 1e-9)}
    return ShardedStructureDatabase(output), stats


class _closing:
    def __init__(self, connection):
        self.connection = connection

    def __enter__(self):
        return self.connection

    def __exit__(self, *exc):
        self.connection.close()


def _write_atomically(path, text):
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _part_rows(chunk, structure_columns, columns, fingerprint, first, width):
    """One chunk parsed into the rows of its part file, ``(rows, counts)``: run where the chunk is parsed (a worker
    process or a Dask worker), so this process only writes them.

    Parameters
    ----------
    chunk : list of dict
        The chunk's rows as read (the user's values, by column).
    structure_columns : list of str
        The columns holding structure texts, in the order they are tried
        (:func:`~._structure_tables.structure_texts`).
    columns : list of str
        The store's user columns, in order (a row's missing column is ``""``).
    fingerprint : dict
    first : int
        The input position (ordinal) of the chunk's first row.
    width : float
        Daltons per shard bin.

    Returns
    -------
    rows : list of tuple
        ``(ordinal, bin, inchikey, smiles, formula, mass, fingerprint bytes, user columns as JSON)`` per parsed row.
    counts : dict
        ``n_rows``, ``n_missing``, ``n_unparsable`` and the :data:`FLAG_COUNTS` of the chunk.
    """
    counts = dict.fromkeys(("n_rows", "n_missing", "n_unparsable", *FLAG_COUNTS), 0)
    out = []
    parsed = parse_texts([structure_texts(row, structure_columns) for row in chunk], fingerprint)
    for position, (row, result) in enumerate(zip(chunk, parsed, strict=True)):
        if (result := count_parse_result(counts, result)) is None:
            continue
        key, smiles, formula, mass, blob = result
        out.append((first + position, bin_of(mass, width), key, smiles, formula, float(mass), blob,
                    json.dumps([row.get(c, "") for c in columns], ensure_ascii=False)))
    return out, counts


def _write_part(build, index, rows, counts):
    """One chunk's parsed rows (:func:`_part_rows`) as ``part-<index>.sqlite``, whole or absent: written without a
    journal or syncs under a temporary name (a part cut short is redone), synced once, then renamed."""
    final = build / f"part-{index:08d}.sqlite"
    tmp = build / f"part-{index:08d}.sqlite.tmp"
    remove_with_journal(tmp)
    connection = sqlite3.connect(tmp)
    try:
        connection.execute("PRAGMA journal_mode = OFF")
        connection.execute("PRAGMA synchronous = OFF")
        for statement in _PART_CREATE:
            connection.execute(statement)
        connection.executemany("INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        connection.executemany("INSERT INTO counts VALUES (?, ?)", counts.items())
        connection.execute("CREATE INDEX by_bin ON rows (bin, ordinal)")
        connection.commit()
    finally:
        connection.close()
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    tmp.replace(final)


def _merge_all(output, plan, old, parts, bins, n_jobs, on_shard):
    """Write every shard of the new generation (skipping those a killed build already wrote); their manifest
    entries in bin order."""
    folder = output / f"generation-{plan['generation']}"
    folder.mkdir(exist_ok=True)
    old_shards = {s["bin"]: s for s in old["shards"]} if old else {}
    grown = bool(old) and len(plan["columns"]) > len(old["columns"])
    jobs = []
    for b in sorted(bins | set(old_shards)):
        previous = output / old_shards[b]["file"] if b in old_shards else None
        jobs.append((b, folder / f"shard-{b:05d}.sqlite", previous, b in bins or grown, [str(p) for p in parts]))
    n_jobs = (os.cpu_count() or 1) if n_jobs is None else max(int(n_jobs), 1)
    entries = []
    if n_jobs == 1 or len(jobs) < 2:
        results = (_merge_shard(plan, *job) for job in jobs)
        pool = None
    else:
        pool = worker_pool(min(n_jobs, len(jobs)))
        results = pool.map(_merge_shard, itertools.repeat(plan), *zip(*jobs, strict=True))
    try:
        for done, (b, n_structures, size) in enumerate(results, 1):
            width = plan["shard_width"]
            entry = {"bin": b, "file": f"generation-{plan['generation']}/shard-{b:05d}.sqlite", "low": b * width,
                     "high": (b + 1) * width, "n_structures": n_structures, "bytes": size}
            entries.append(entry)
            if on_shard is not None:
                on_shard({**entry, "done": done, "total": len(jobs)})
    finally:
        if pool is not None:
            pool.shutdown()
    return entries


def _merge_shard(plan, b, target, previous, changed, parts):
    """Write the shard of bin ``b`` to ``target`` (unless a killed build already did): ``previous`` shard's rows,
    then the parts' rows of the bin in input order, duplicates merged; ``(bin, n_structures, bytes)``."""
    if not target.exists():
        if not changed:  # an append that brings nothing to this bin: the same bytes
            try:
                os.link(previous, target)
            except OSError:
                shutil.copyfile(previous, target)
        else:
            _write_shard(plan, b, target, previous, parts)
    with _closing(connect_read_only(target)) as connection:
        n_structures = int(connection.execute("SELECT value FROM meta WHERE key = 'n_structures'").fetchone()[0])
    return b, n_structures, target.stat().st_size


def _write_shard(plan, b, target, previous, parts):
    tmp = target.with_name(target.name + ".tmp")
    remove_with_journal(tmp)
    connection = sqlite3.connect(tmp)
    insert = f"INSERT INTO structures ({_ROW}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    seen = set()
    try:
        for statement in _CREATE:
            connection.execute(statement)
        for batch in _previous_rows(previous, len(plan["columns"])):
            seen.update((row[1][:14], row[3]) for row in batch)
            connection.executemany(insert, batch)
        for part in parts:
            with _closing(connect_read_only(part)) as reader:
                cursor = reader.execute("SELECT ordinal, inchikey, smiles, formula, mass, fp, columns FROM rows "
                                        "WHERE bin = ? ORDER BY ordinal", (b,))
                while block := cursor.fetchmany(2000):
                    batch = []
                    for values in block:
                        if (values[1][:14], values[3]) in seen:
                            continue
                        seen.add((values[1][:14], values[3]))
                        batch.append((*values, row_checksum(values)))
                    connection.executemany(insert, batch)
        meta = {"schema": SCHEMA, "version": str(VERSION), "fingerprint": json.dumps(plan["fingerprint"]),
                "columns": json.dumps(plan["columns"]), "n_structures": str(len(seen)),
                "source": f"{STORE_SCHEMA} shard {b}",
                **{k: json.dumps(plan[k]) for k in ("identifier_column", "name_column")}}
        meta["checksum"] = str(_meta_checksum(meta))
        connection.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        connection.execute("CREATE INDEX by_formula ON structures (formula)")
        connection.execute("CREATE INDEX by_mass ON structures (mass)")
        connection.commit()
    finally:
        connection.close()
    tmp.replace(target)


def _previous_rows(previous, n_columns):
    """The rows of the store's previous shard in id order, verified, their user columns padded with ``""`` to
    ``n_columns`` (a table appended with new columns)."""
    if previous is None:
        return
    where = f"Structure store shard {previous}"
    with _closing(connect_read_only(previous)) as reader:
        cursor = reader.execute(f"SELECT {_ROW} FROM structures ORDER BY id")
        while block := cursor.fetchmany(2000):
            check_rows(block, where)
            out = []
            for row in block:
                values = row[:-1]
                user = json.loads(values[6])
                if len(user) < n_columns:
                    values = (*values[:6], json.dumps(user + [""] * (n_columns - len(user)), ensure_ascii=False))
                    out.append((*values, row_checksum(values)))
                else:
                    out.append(row)
            yield out
