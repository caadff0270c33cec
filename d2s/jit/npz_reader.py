"""Reading a saved program's `.npz` as hostile input: sizes checked before allocation.

`np.load` trusts a file: it decompresses a member whatever its size and
allocates the array its header declares before reading a byte of data. Here
every bound is checked first, from the zip directory and each member's
`.npy` header: the members' declared (uncompressed) sizes against a total
(`D2S_LOAD_MAX_BYTES`), each array's elements against
`D2S_LOAD_MAX_ELEMENTS`, and the header's shape and dtype against the
member's declared size (a member may not promise fewer bytes than its array
needs, nor hide more). Only then is the data read, at most the declared
size (zipfile stops there; its CRC check catches a member that lies).
Numeric dtypes only: nothing is unpickled.
"""
from __future__ import annotations

import zipfile

import numpy as np

from ..core.attr_schema import env_int, max_elements
from .serialization import ProgramFormatError

_DEFAULT_MAX_BYTES = 1 << 32
MAX_MEMBERS = 1 << 16


def max_bytes():
    """Bytes a loaded program's files may hold in all, uncompressed
    (`D2S_LOAD_MAX_BYTES`, default 4 GiB): the `.json` and the `.npz` members."""
    return env_int("D2S_LOAD_MAX_BYTES", _DEFAULT_MAX_BYTES)


def read_arrays(path):
    """`{key: array}` of a `.npz` written by `np.savez` (or `savez_compressed`)."""
    try:
        zf = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise ProgramFormatError(f"{path}: not a valid weights file ({e})") from None
    with zf:
        infos = _checked_directory(zf, path)
        arrays = {}
        for info in infos:
            try:
                arrays[info.filename[:-4]] = _read_member(zf, info, path)
            except ProgramFormatError:
                raise
            except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError,
                    RuntimeError) as e:
                raise ProgramFormatError(f"{path}: not a valid weights file "
                                         f"({info.filename[:80]}: {e})") from None
    return arrays


def _checked_directory(zf, path):
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ProgramFormatError(f"{path}: {len(infos)} members, more than {MAX_MEMBERS}")
    total, seen, limit = 0, set(), max_bytes()
    for info in infos:
        name = info.filename
        if not name.endswith(".npy") or name in seen:
            raise ProgramFormatError(f"{path}: unexpected member {name[:80]!r} (a weights file "
                                     "holds one .npy file per array)")
        seen.add(name)
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise ProgramFormatError(f"{path}: member {name[:80]!r} uses an unsupported "
                                     "compression")
        total += info.file_size
        if total > limit:
            raise ProgramFormatError(
                f"{path}: its arrays declare more than {limit} bytes uncompressed "
                f"(D2S_LOAD_MAX_BYTES); refused before decompressing")
    return infos


def _read_member(zf, info, path):
    where = f"{path}: array {info.filename[:-4][:80]!r}"
    with zf.open(info) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ProgramFormatError(f"{where}: unsupported .npy version {version}")
        if dtype.hasobject:
            raise ProgramFormatError(f"{where}: refused to load (object arrays need pickle)")
        if dtype.kind not in "biufc":
            raise ProgramFormatError(f"{where}: dtype {dtype} is not numeric")
        count = 1
        for d in shape:
            count *= d
        if count > max_elements():
            raise ProgramFormatError(f"{where}: {count} elements, more than "
                                     f"D2S_LOAD_MAX_ELEMENTS={max_elements()}")
        nbytes = count * dtype.itemsize
        if f.tell() + nbytes != info.file_size:
            raise ProgramFormatError(
                f"{where}: its header declares {dtype}{list(shape)} ({nbytes} bytes) but the "
                f"member holds {info.file_size - f.tell()} bytes of data")
        flat = np.empty(count, dtype)
        view, got = memoryview(flat.view(np.uint8)), 0
        while got < nbytes:
            n = f.readinto(view[got:])
            if not n:
                raise ProgramFormatError(f"{where}: truncated")
            got += n
        f.read(1)  # at the end: zipfile checks the member's CRC
    order = "F" if fortran else "C"
    return flat.reshape(shape, order=order)
