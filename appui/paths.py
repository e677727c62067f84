"""Which folders a path typed in the app may point into.

Allowed: the project's ``data/`` folder; its ``work/`` folder (git-ignored, where
the README's commands write) and ``../shared/corpora`` (next to the project) when
they are safe (:func:`trust_problem`: they exist, and they and their parent
folder belong to this user or root and are not writable by others: a clone in a
world-writable folder such as /tmp must not let another user plant
``../shared/corpora``); and every folder listed in ``CALIB_ALLOWED_DIRS``
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
    """Why ``folder`` cannot be trusted as an allowed root, or None: it must be
    an existing folder that, like its parent folder (after resolving links),
    belongs to this user or root and is not writable by others."""
    folder = Path(folder)
    if not folder.is_dir():
        return "does not exist"
    resolved = folder.resolve()
    for p in (resolved, resolved.parent):
        st_ = p.stat()
        if hasattr(os, "getuid") and st_.st_uid not in (os.getuid(), 0):
            return f"{p} belongs to another user (uid {st_.st_uid})"
        if st_.st_mode & stat.S_IWOTH:
            return f"{p} is writable by every user"
    return None


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
                target = p.resolve()
                if not _inside(target, roots):
                    return p, target
    return None


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
    resolved = p.resolve()
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
