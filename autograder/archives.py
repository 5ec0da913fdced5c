"""Read an uploaded archive (zip or tar, as LMSes export them) without trusting its member names.

An archive is refused as a whole when any member is a link (symbolic or hard), a device or FIFO, has an absolute
path, or has a `..` component: nothing is ever extracted to disk, and only the one chosen notebook is read into
memory, at most `limit` bytes.
"""
from __future__ import annotations

import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")


class UnsafeArchive(ValueError):
    """The archive cannot be graded; the message says which member and why."""


def is_archive(path: Path) -> bool:
    """True for a file whose name says zip or tar (compressed or not)."""
    return Path(path).name.lower().endswith(ARCHIVE_SUFFIXES)


def _check_name(name: str, archive: Path) -> str:
    clean = name.replace("\\", "/")
    parts = PurePosixPath(clean).parts
    if clean.startswith("/") or (len(clean) > 1 and clean[1] == ":"):
        raise UnsafeArchive(f"{archive.name} holds {name!r}, an absolute path; archives must hold relative paths only")
    if ".." in parts:
        raise UnsafeArchive(f"{archive.name} holds {name!r}, which climbs out of the archive with '..'")
    return clean


def members(path: Path) -> dict[str, int]:
    """{member path: size} of the regular files in a zip or tar; raises UnsafeArchive for anything unsafe."""
    path = Path(path)
    found: dict[str, int] = {}
    if path.name.lower().endswith(".zip"):
        try:
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist():
                    name = _check_name(info.filename, path)
                    kind = stat.S_IFMT(info.external_attr >> 16)  # 0 when the zip tool recorded no file type
                    if kind == stat.S_IFLNK:
                        raise UnsafeArchive(f"{path.name} holds {info.filename!r}, a symbolic link; upload the files "
                                            "themselves")
                    if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
                        raise UnsafeArchive(f"{path.name} holds {info.filename!r}, which is not a regular file")
                    if not info.is_dir():
                        found[name] = info.file_size
        except (zipfile.BadZipFile, OSError, RuntimeError) as err:
            raise UnsafeArchive(f"upload is not a readable zip file ({err})") from None
        return found
    try:
        with tarfile.open(path) as archive:
            for info in archive.getmembers():
                name = _check_name(info.name, path)
                if info.issym() or info.islnk():
                    kind = "symbolic" if info.issym() else "hard"
                    raise UnsafeArchive(f"{path.name} holds {info.name!r}, a {kind} link to {info.linkname!r}; "
                                        "upload the files themselves")
                if not (info.isfile() or info.isdir()):
                    raise UnsafeArchive(f"{path.name} holds {info.name!r}, which is not a regular file")
                if info.isfile():
                    found[name] = info.size
    except (tarfile.TarError, OSError, EOFError) as err:
        raise UnsafeArchive(f"upload is not a readable tar archive ({err})") from None
    return found


def read_member(path: Path, name: str, limit: int) -> bytes:
    """The bytes of member `name` (a name `members` returned), at most `limit` + 1 bytes."""
    path = Path(path)
    if path.name.lower().endswith(".zip"):
        with zipfile.ZipFile(path) as archive:
            info = next(i for i in archive.infolist() if i.filename.replace("\\", "/") == name)
            with archive.open(info) as handle:
                return handle.read(limit + 1)
    with tarfile.open(path) as archive:
        info = next(i for i in archive.getmembers() if i.name.replace("\\", "/") == name and i.isfile())
        handle = archive.extractfile(info)
        return handle.read(limit + 1) if handle else b""
