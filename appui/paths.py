"""Which folders a path typed in the app may point into.

Allowed: the project's ``data/`` folder; its ``work/`` folder (git-ignored, where
the README's commands write) and ``../shared/corpora`` (next to the project) when
they are safe (:func:`trust_problem`: they exist, and every folder and link on
the way to them, the folder holding each link included, belongs to this user or
root, and none is writable by others but for a sticky folder such as /tmp: a
clone in a world-writable folder must not let another user plant ``../shared``
or a link ``../shared/corpora``); and every folder listed in ``CALIB_ALLOWED_DIRS``
(separated by ``os.pathsep``, taken as given: naming it is the trust). Symlinks are resolved before the check, so a link inside an
allowed folder that points outside it is refused; for a folder, every symlink
inside it (at any depth: the Clough loader reads subfolders) must point inside
the allowed folders too, since the loader opens the files it finds there.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from calib.reading.sample import REPO_ROOT

ENV_VAR = "CALIB_ALLOWED_DIRS"


class PathNotAllowed(ValueError):
    """A typed path is outside the allowed folders, or does not exist."""


def implicit_roots() -> list[tuple[Path, str | None]]:
    """The folders allowed without ``CALIB_ALLOWED_DIRS``, each with the reason
    it is not allowed on this machine (None: allowed)."""
    out: list[tuple[Path, str | None]] = [(REPO_ROOT / "data", None)]
    for folder in (REPO_ROOT / "work", REPO_ROOT.parent / "shared" / "corpora"):
        out.append((folder, trust_problem(folder)))
    return out


def trust_problem(folder: Path) -> str | None:
    """Why ``folder`` cannot be trusted as an allowed root, or None. Every step of the path
    to it, each link on the way and each link's own target path (:func:`_steps`), must belong
    to this user or root; the folder itself may not be writable by others, and a folder that
    holds a step may be only with its sticky bit (as /tmp: then others cannot rename or
    replace what this user or root owns there). So another user can neither have made
    ``../shared`` (or a link ``../shared/corpora``) beside a clone in a world-writable folder,
    nor own any folder on the way."""
    folder = Path(folder)
    try:
        if not folder.is_dir():
            return "does not exist"
        steps = _steps(folder.absolute())
    except (OSError, RuntimeError) as exc:  # a link loop on the way
        return f"cannot be followed ({exc})"
    mine = (os.getuid(), 0) if hasattr(os, "getuid") else None
    for step, holder in steps:
        st_ = step.lstat()
        if mine is not None and st_.st_uid not in mine:
            return f"{step} belongs to another user (uid {st_.st_uid})"
        if holder is not None:
            hs = holder.stat()
            if hs.st_mode & stat.S_IWOTH and not hs.st_mode & stat.S_ISVTX:
                return f"{holder} is writable by every user"
    resolved = folder.resolve()
    for p in (resolved, resolved.parent):
        if p.stat().st_mode & stat.S_IWOTH and (p == resolved or not p.stat().st_mode & stat.S_ISVTX):
            return f"{p} is writable by every user"
    return None


def _steps(path: Path, depth: int = 0) -> list[tuple[Path, Path | None]]:
    """(each path component, the folder holding it) from ``/`` down to ``path``, following
    every symlink on the way: a link's own entry, then the components of its target."""
    if depth > 40:
        raise OSError(40, "too many levels of symbolic links", str(path))
    out: list[tuple[Path, Path | None]] = [(Path(path.anchor), None)]
    current = Path(path.anchor)
    for part in path.parts[1:]:
        step = current / part
        out.append((step, current))
        if step.is_symlink():
            target = Path(os.readlink(step))
            out += _steps(target if target.is_absolute() else current / target, depth + 1)
            current = step.resolve()
        else:
            current = step
    return out


def allowed_roots() -> list[Path]:
    roots = [folder for folder, problem in implicit_roots() if problem is None]
    for part in os.environ.get(ENV_VAR, "").split(os.pathsep):
        if part.strip():
            roots.append(Path(part.strip()).expanduser())
    return unique_resolved(roots)


def unique_resolved(paths) -> list[Path]:
    """The paths resolved (symlinks followed), first occurrence kept."""
    out: list[Path] = []
    for p in paths:
        p = Path(p).resolve()
        if p not in out:
            out.append(p)
    return out


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == r or path.is_relative_to(r) for r in roots)


def _escaping_link(folder: Path, roots: list[Path]) -> tuple[Path, Path] | None:
    """The first symlink under ``folder`` whose target is outside ``roots`` (link, target), or None."""
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for name in sorted(dirnames + filenames):
            p = Path(dirpath) / name
            if p.is_symlink():
                target = resolve_link(p, PathNotAllowed)
                if not _inside(target, roots):
                    return p, target
    return None


def resolve_link(p: Path, error=ValueError) -> Path:
    """``p`` with its symlinks resolved; a link loop is ``error`` in one line naming it."""
    try:
        return p.resolve()
    except (RuntimeError, OSError) as exc:  # Python 3.11-3.12: RuntimeError("Symlink loop from ..."); 3.13: OSError
        raise error(f"{p}: a symbolic link loop (a link that points back to itself, directly or through "
                    f"others), so it names no file ({type(exc).__name__})") from None


def resolve_allowed(text: str) -> Path:
    """The resolved path for ``text`` (relative paths are taken from the
    project root), or :class:`PathNotAllowed` with a readable message."""
    text = (text or "").strip()
    if not text:
        raise PathNotAllowed("Type a path to a sample folder or file.")
    if "\x00" in text:
        raise PathNotAllowed("The path contains a NUL character.")
    p = Path(text).expanduser()
    if not p.is_absolute():
        p = REPO_ROOT / p
    resolved = resolve_link(p, PathNotAllowed)
    roots = allowed_roots()
    if not _inside(resolved, roots):
        listed = ", ".join(str(r) for r in roots)
        refused = "".join(f"; {folder} is not allowed: {problem}" for folder, problem in implicit_roots()
                          if problem not in (None, "does not exist"))
        raise PathNotAllowed(f"{text!r} resolves to {resolved}, which is outside the allowed folders "
                             f"({listed}{refused}). Add a folder to {ENV_VAR} to allow it.")
    if not resolved.exists():
        raise PathNotAllowed(f"{resolved} does not exist.")
    if resolved.is_dir():
        bad = _escaping_link(resolved, roots)
        if bad is not None:
            raise PathNotAllowed(f"{bad[0]} is a link to {bad[1]}, which is outside the allowed folders; "
                                 "the sample folder cannot be loaded.")
    return resolved
