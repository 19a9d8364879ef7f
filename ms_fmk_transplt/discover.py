"""Walk the input tree: what to convert, copy, link or skip. Never follows a symlink."""

from __future__ import annotations

import dataclasses
import enum
import fnmatch
import os
import posixpath
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ms_fmk_transplt.engine.project import ProjectLayout, SignatureMemo
from ms_fmk_transplt.suggest import closest

LOG_NAME = "msFmkTranspltlog.txt"  # written into every output folder (run.py)
# The folders a run writes (`<name>_msft`, `distributed`'s `<name>_msft_multi`) and its staging
# siblings (`.<name>_msft.partial-PID`, `.old-PID`; pipeline.Staging) hold converted code: walked as
# input they would be converted again, `X_msft/X_msft`, and their issues counted twice.
_OUTPUT_FOLDER = re.compile(r".+_msft(_multi)?")
_STAGING_FOLDER = re.compile(r"\..+_msft(_multi)?\.(partial|old)-\d+")


def kept_aside(name: str) -> str:
    """The name a file the run writes takes when the input has one of that name: `x.msft.txt`."""
    stem, _, suffix = name.rpartition(".")
    return f"{stem}.msft.{suffix}"


def earlier_output(path: Path) -> bool:
    """True for a folder an earlier ms_fmk_transplt run wrote (its log, maybe renamed, inside)."""
    if _STAGING_FOLDER.fullmatch(path.name):
        return True
    return bool(_OUTPUT_FOLDER.fullmatch(path.name)) and any(
        (path / log).is_file() for log in (LOG_NAME, kept_aside(LOG_NAME))
    )


def converted(name: str) -> bool:
    """Files the engine converts: Python sources, and Jupyter notebooks' code cells."""
    return name.endswith((".py", ".ipynb"))


class TreeEntryKind(str, enum.Enum):
    DIR = "dir"
    PYTHON = "python"
    FILE = "file"
    LINK = "link"
    SKIP = "skip"


@dataclass(frozen=True)
class TreeEntry:
    """One path below the input root; `rel` uses POSIX separators, `link` is a symlink's new target."""

    rel: str
    kind: TreeEntryKind
    path: Path
    link: str = ""
    reason: str = ""
    excluded: bool = False  # matched --exclude: copied unchanged, never analysed


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _link_entry(path: Path, rel: str, root: Path) -> TreeEntry:
    """A symlink is reproduced, never followed: inside the tree by its relative way there; to a
    place outside the tree (`data -> /mnt/datasets`) by that place's absolute path, so the copy
    still finds it; broken or looping as written. Only the last two kinds carry a `reason`, said
    as a warning: a link is a project's layout, not a file the run failed on."""
    try:
        written = os.readlink(path)
    except OSError as exc:
        return TreeEntry(rel, TreeEntryKind.SKIP, path, reason=f"unreadable symlink ({exc.strerror})")
    try:
        target = path.resolve(strict=True)
    except RuntimeError:
        return TreeEntry(
            rel, TreeEntryKind.LINK, path, link=written, reason="symlink loop, linked as written"
        )
    except FileNotFoundError:
        return TreeEntry(
            rel,
            TreeEntryKind.LINK,
            path,
            link=written,
            reason=f"broken symlink to {written}, linked as written",
        )
    except OSError as exc:
        if exc.errno == 40:
            return TreeEntry(
                rel, TreeEntryKind.LINK, path, link=written, reason="symlink loop, linked as written"
            )
        return TreeEntry(rel, TreeEntryKind.SKIP, path, reason=f"unreadable symlink ({exc.strerror})")
    if not _inside(target, root):
        return TreeEntry(
            rel,
            TreeEntryKind.LINK,
            path,
            link=str(target),
            reason=f"symlink to {written} outside the input tree, linked to {target} and not analysed",
        )
    relative = os.path.relpath(target, path.parent.resolve())
    return TreeEntry(rel, TreeEntryKind.LINK, path, link=relative)


def link_notes(entries: list[TreeEntry]) -> list[str]:
    """The warnings for symlinks reproduced but not followed (outside the tree, broken, looping)."""
    return [f"{e.rel}: {e.reason}" for e in entries if e.kind is TreeEntryKind.LINK and e.reason]


def _identities(folders: tuple[Path, ...]) -> dict[int, set[tuple[int, int]]]:
    """(device, inode) of each folder that exists, by inode."""
    found: dict[int, set[tuple[int, int]]] = {}
    for folder in folders:
        try:
            info = folder.stat()
        except OSError:  # not made yet: nothing of it to walk
            continue
        found.setdefault(info.st_ino, set()).add((info.st_dev, info.st_ino))
    return found


def _identity(child: os.DirEntry[str]) -> tuple[int, int] | None:
    try:
        info = child.stat(follow_symlinks=False)
    except OSError:  # gone since it was listed: the walk below says so
        return None
    return (info.st_dev, info.st_ino)


def discover(
    source: Path, exclude: tuple[Path, ...] = (), left_out: list[str] | None = None
) -> list[TreeEntry]:
    """Entries for a file or a directory tree, in a stable order, directories before contents.

    Folders in `exclude` and earlier outputs of this tool (`earlier_output`) below the root are
    not walked; the latter are added to `left_out` (as `rel/`), for the run to say so."""
    source = source.absolute()
    if source.is_file():
        kind = TreeEntryKind.PYTHON if converted(source.name) else TreeEntryKind.FILE
        return [TreeEntry(source.name, kind, source)]
    root = source.resolve()
    # excluded folders by identity, not by resolved path: a folder's inode comes with its listing,
    # where resolving each folder's path took ~8 system calls (326 folders in transformers)
    not_walked = _identities(exclude)
    entries: list[TreeEntry] = []
    stack: list[tuple[Path, str]] = [(source, "")]
    while stack:
        directory, prefix = stack.pop()
        try:
            children = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            entries.append(
                TreeEntry(
                    prefix.rstrip("/") or ".",
                    TreeEntryKind.SKIP,
                    directory,
                    reason=f"cannot list directory ({exc.strerror})",
                )
            )
            continue
        subdirs = []
        for child in children:
            rel = f"{prefix}{child.name}"
            path = Path(child.path)
            if child.is_symlink():
                entries.append(_link_entry(path, rel, root))
            elif child.is_dir(follow_symlinks=False):
                if child.inode() in not_walked and _identity(child) in not_walked[child.inode()]:
                    continue
                if earlier_output(path):
                    if left_out is not None:
                        left_out.append(rel + "/")
                    continue
                entries.append(TreeEntry(rel, TreeEntryKind.DIR, path))
                subdirs.append((path, rel + "/"))
            elif child.is_file(follow_symlinks=False):
                kind = TreeEntryKind.PYTHON if converted(child.name) else TreeEntryKind.FILE
                entries.append(TreeEntry(rel, kind, path))
            else:
                try:
                    mode = child.stat(follow_symlinks=False).st_mode
                except OSError as exc:  # gone since the folder was listed
                    entries.append(
                        TreeEntry(rel, TreeEntryKind.SKIP, path, reason=f"cannot read ({exc.strerror})")
                    )
                    continue
                what = (
                    "FIFO"
                    if stat.S_ISFIFO(mode)
                    else "socket"
                    if stat.S_ISSOCK(mode)
                    else "device or special file"
                )
                entries.append(TreeEntry(rel, TreeEntryKind.SKIP, path, reason=f"{what}, not copied"))
        stack.extend(reversed(subdirs))
    return entries


def normalised_glob(glob: str) -> str:
    """An --exclude glob spelled as the paths it is matched against: `./a/b.py` and `a//b.py` are
    `a/b.py`, a folder's trailing `/` goes (`tests/` is `tests`)."""
    return posixpath.normpath(glob).strip("/") if glob else ""


def excluded(rel: str, globs: tuple[str, ...]) -> bool:
    """True when `rel` or one of its folders matches a glob (`tests/*`, `**/vendor/**`, `*_pb2.py`).

    An absolute glob (what `anchored` left of one outside the input root) matches only names that
    are absolute themselves: files given outside the current folder to `analyse`."""
    parts = rel.split("/")
    candidates = [rel] + ["/".join(parts[:i]) for i in range(1, len(parts))]
    for glob in globs:
        if glob.startswith("/"):
            whole = "/" + normalised_glob(glob)
            if rel.startswith("/") and any(fnmatch.fnmatchcase(c, whole) for c in candidates):
                return True
            continue
        bare = normalised_glob(glob)
        variants = {
            bare,
            bare.removeprefix("**/"),
            bare.removesuffix("/**"),
            bare.removeprefix("**/").removesuffix("/**"),
        }
        if any(fnmatch.fnmatchcase(c, v) for c in candidates for v in variants if v):
            return True
    return False


def anchored(glob: str, base: Path) -> str:
    """An --exclude glob as the entries below `base` are named: an absolute path inside `base`
    (`/abs/src/tests/*`, through a symlinked folder too) relative to it (`tests/*`); any other
    glob as it is."""
    if not glob.startswith("/"):
        return glob
    for root in dict.fromkeys((os.path.abspath(base), os.path.realpath(base))):
        for path in dict.fromkeys((posixpath.normpath(glob), os.path.realpath(glob))):
            if path == root:
                return "."
            if path.startswith(root.rstrip("/") + "/"):
                return path[len(root.rstrip("/")) + 1 :]
    return glob


def apply_excludes(
    entries: list[TreeEntry],
    globs: tuple[str, ...],
    base: Path | None = None,
    warnings: list[str] | None = None,
) -> list[TreeEntry]:
    """Python files under an --exclude glob become plain copies, marked so nothing analyses them.

    `base`: the folder the entries' names start from; an absolute glob inside it is taken relative
    to it, and one that matches no entry (outside it) is reported in `warnings`."""
    if not globs:
        return entries
    given = globs
    if base is not None:
        globs = tuple(anchored(glob, base) for glob in globs)
    marked = [
        dataclasses.replace(e, kind=TreeEntryKind.FILE, excluded=True)
        if e.kind in (TreeEntryKind.PYTHON, TreeEntryKind.FILE) and excluded(e.rel, globs)
        else e
        for e in entries
    ]
    if warnings is not None and base is not None:
        for glob, used in zip(given, globs, strict=True):
            if used == ".":
                warnings.append(f"--exclude {glob}: the input folder itself, excludes nothing")
            elif used.startswith("/") and not any(excluded(e.rel, (used,)) for e in entries):
                warnings.append(f"--exclude {glob}: outside {base}, matches nothing")
            elif not used.startswith("/") and not any(excluded(e.rel, (used,)) for e in entries):
                warnings.append(f"--exclude {glob}: matches nothing in {base}{_glob_hint(used, entries)}")
    return marked


def _glob_hint(glob: str, entries: list[TreeEntry]) -> str:
    """ " (did you mean tests/*?)" for a glob whose fixed part is one misspelt folder or file name."""
    bare = normalised_glob(glob)
    fixed = bare.split("/")
    wild = [i for i, part in enumerate(fixed) if any(c in part for c in "*?[")]
    if len(wild) == len(fixed) or fixed[0] == "**":
        return ""  # nothing spelled out to correct (`*_pb2.py`), or at no fixed depth (`**/vendor`)
    names = {p for e in entries for p in _prefixes(e.rel)}
    for i, part in enumerate(fixed):
        if i in wild or "/".join(fixed[: i + 1]) in names:
            continue
        parent = "/".join(fixed[:i])
        siblings = {
            n.rsplit("/", 1)[-1] for n in names if n.count("/") == i and (not i or n.startswith(parent + "/"))
        }
        found = closest(part, siblings)
        if found is None:
            return ""
        return f" (did you mean {'/'.join([*fixed[:i], found, *fixed[i + 1 :]])}?)"
    return ""


def _prefixes(rel: str) -> list[str]:
    parts = rel.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def no_python_notice(entries: list[TreeEntry], where: str) -> str | None:
    """The warning for an input with nothing to convert or analyse (None when it has a Python file)."""
    if any(e.kind is TreeEntryKind.PYTHON for e in entries):
        return None
    if any(e.excluded and e.rel.endswith(".py") for e in entries):
        return f"no Python files to analyse in {where}: every one matches --exclude"
    return f"no Python files found in {where}"


def project_layout(entries: list[TreeEntry], memo: SignatureMemo | None = None) -> ProjectLayout:
    """The input tree's Python modules, excluded ones too (they are still the project's), which
    decide what each file's imports reach (engine/project/first_party.py), knowing what the functions of
    the analysed ones hand their parameters to (engine/project/project_devices.py)."""
    layout = ProjectLayout.of(e.rel for e in entries if e.kind is TreeEntryKind.PYTHON or e.excluded)
    return layout.reading(
        _sources(e for e in entries if e.kind is TreeEntryKind.PYTHON and e.rel.endswith(".py")), memo
    )


def _sources(entries: Iterable[TreeEntry]) -> Iterator[tuple[str, bytes]]:
    """Each readable module's bytes (one that cannot be read is reported when it converts)."""
    for entry in entries:
        try:
            source = entry.path.read_bytes()
        except OSError:
            continue
        yield entry.rel, source  # a script without functions uses the project's values too
