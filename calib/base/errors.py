"""User-facing errors and the checks of the paths a command reads and writes.

Shared by the CLI (``calib.cli``) and the library commands below it (draw,
the Spark engine): an error a user can fix is a :class:`CliError`, printed as
one line with exit status 2; an output is checked and claimed before any work.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2 (or ``status``)."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


def check_input(path: str | None, what: str, *, folder: bool = True, max_bytes: int | None = None,
                kind: str = "it") -> None:
    """Before any work: an input path exists and is a regular file (or, unless ``folder`` is
    False, a folder), of at most ``max_bytes`` (:func:`calib.base.inputs.check_path`): a FIFO,
    a device such as ``/dev/zero``, a socket or a symlink loop is one line naming it (``kind``:
    what the bound is of, e.g. "a review queue")."""
    if path is None:
        return
    from calib.base.inputs import InputError, check_path
    if not os.path.lexists(path):
        raise CliError(f"{what} {path}: does not exist")
    try:
        check_path(path, folder=folder, max_bytes=max_bytes, what=kind)
    except InputError as exc:
        if exc.detail == "file not found":  # a dangling link
            raise CliError(f"{what} {path}: does not exist (a link to a missing file)") from None
        raise CliError(f"{what} {exc}") from None


def _check_parent(out: Path, flag: str) -> None:
    """Every existing ancestor of ``out`` is a folder, and the nearest one is writable."""
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise CliError(f"{flag} {out}: {parent} is a file, not a folder")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise CliError(f"{flag} {out}: folder {parent} is not writable")
            return


_claims = ExitStack()  # outputs this command holds (calib.base.atomic.claim_output), released when calib.cli.main() returns


def claim(out: Path, flag: str = "--out") -> Path:
    """Take ``out`` for this command before any work: a second calib writing
    the same output at once is refused in one line, and an output folder that
    cannot hold a file (a read-only or pseudo file system) fails here, not
    after the work."""
    from calib.base.atomic import OutputBusy, claim_output
    try:
        _claims.enter_context(claim_output(out))
    except OutputBusy as exc:
        raise CliError(f"{flag} {exc.strerror}")
    except OSError as exc:
        raise CliError(f"{flag} {out}: cannot write there ({exc.strerror or exc})")
    return out


def check_out_file(path: str, suffixes: tuple[str, ...], overwrite: bool, flag: str = "--out") -> Path:
    """An output file that can be written: right suffix, not an existing file unless --overwrite;
    claimed for this command (:func:`claim`) before the existence check, so two runs cannot both pass it."""
    out = Path(path)
    if out.suffix.lower() not in suffixes:
        raise CliError(f"{flag} {out}: must end in {' or '.join(suffixes)}")
    if out.is_dir():
        raise CliError(f"{flag} {out}: is a folder, not a file")
    _check_parent(out, flag)
    claim(out, flag)
    if out.exists() and not overwrite:
        raise CliError(f"{flag} {out}: already exists (pass --overwrite to replace it)")
    return out


def same_path(one, other) -> bool:
    """Two output names for one file: the same path once resolved (links followed), or one existing file."""
    p, q = Path(one), Path(other)
    try:
        if p.exists() and q.exists():
            return p.samefile(q)
        return p.resolve() == q.resolve()
    except (OSError, RuntimeError):  # a link loop: the output checks name it
        return False


def beside(out, part: str) -> Path:
    """The file written beside ``out``: ``results.csv`` -> ``results.knobs.csv``."""
    out = Path(out)
    return out.with_name(f"{out.stem}.{part}{out.suffix}")


class Outputs:
    """Every file a command writes, declared before any work and checked alike: right suffix,
    not an existing file or a folder unless --overwrite, claimed for this command
    (:func:`check_out_file`), and no two of them on one path (the second would replace the first).
    A file written beside another (the knobs table beside the results) is declared with
    :meth:`beside` and named in messages by what it is."""

    def __init__(self, overwrite: bool):
        self.overwrite = overwrite
        self.paths: dict[str, Path] = {}  # what each file is ("--out", "the knobs table beside --out") -> path

    def file(self, flag: str, path: str, suffixes: tuple[str, ...]) -> Path:
        for what, taken in self.paths.items():
            if same_path(path, taken):
                raise CliError(f"{flag} {path}: is the same file as {what} {taken}; name another file")
        out = check_out_file(path, suffixes, self.overwrite, flag)
        self.paths[flag] = out
        return out

    def beside(self, flag: str, part: str, what: str) -> Path:
        """``NAME.PART.SUFFIX`` beside the output of ``flag`` (declared first), as ``what`` (e.g. "the knobs table")."""
        out = self.paths[flag]
        return self.file(f"{what} beside {flag}", str(beside(out, part)), (out.suffix.lower(),))


def check_out_dir(path: str, overwrite: bool, flag: str = "--out") -> Path:
    """An output folder that can be written: not a file, not a non-empty folder unless --overwrite;
    claimed for this command (:func:`claim`) before those checks."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise CliError(f"{flag} {out}: is a file, not a folder")
    if not out.is_dir():
        _check_parent(out, flag)
    claim(out, flag)
    if out.is_dir():
        if any(out.iterdir()) and not overwrite:
            raise CliError(f"{flag} {out}: folder exists and is not empty (pass --overwrite to write into it)")
        if not os.access(out, os.W_OK | os.X_OK):
            raise CliError(f"{flag} {out}: folder is not writable")
    return out


def check_rate(value: float, flag: str) -> None:
    if not 0.0 <= value <= 1.0:
        raise CliError(f"{flag} must be a rate in [0, 1], got {value:g}")


