"""Writing into a folder the user named (`--out`): nothing below it is reached through a link.

The folder itself is taken as named, links on the way to it included: the user chose it. Below
it, every folder is opened from the one above with O_NOFOLLOW, every file is written under a new
name (O_EXCL, O_NOFOLLOW) and renamed over the old one, and only regular files are removed. So a
link left inside (an image folder linked elsewhere, a linked page) can redirect neither a write
nor a deletion out of the folder: it is refused, naming the link and what to do.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path, PurePath

from workbench.runtime.errors import WorkbenchError, fail

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW


class OutDir:
    """The folder `flag` names, for writing and pruning the files a command makes there."""

    def __init__(self, root: str | Path, flag: str) -> None:
        self.root = Path(os.path.abspath(root))
        self.flag = flag

    def check(self, rel: str, folder: bool = False) -> None:
        """Refuse a link, or a thing of the wrong type, at `rel` (a file, or a folder) or on the
        way to it: called on every path a command will touch before it touches any."""
        parts = _parts(rel)
        here = self.root
        for i, part in enumerate(parts):
            here = here / part
            try:
                mode = os.lstat(here).st_mode
            except (FileNotFoundError, NotADirectoryError):  # the latter: above the root
                return  # made when written, or the write says why not
            want_folder = folder or i < len(parts) - 1
            if not (stat.S_ISDIR(mode) if want_folder else stat.S_ISREG(mode)):
                raise self._refused(here, want_folder)

    def put(self, rel: str, data: str | bytes) -> Path:
        """Write `data` to `rel` whole or not at all (a reader never sees half a file), making
        the folders on the way; the path written."""
        path = self.root / rel
        parent, name = _parts(rel)[:-1], _parts(rel)[-1]
        payload = data.encode() if isinstance(data, str) else data
        try:
            with self._opened(parent, create=True) as fd:
                self._absent_or_regular(fd, name, path)
                tmp = f".{name}.{secrets.token_hex(4)}"
                out = os.open(tmp, _NEW_FILE, 0o644, dir_fd=fd)
                try:
                    with os.fdopen(out, "wb") as f:
                        f.write(payload)
                    os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
                except BaseException:
                    with suppress(OSError):
                        os.unlink(tmp, dir_fd=fd)
                    raise
        except OSError as exc:  # named by the whole path: dir_fd calls name only the last part
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        return path

    def remove(self, rel: str) -> bool:
        """Delete the regular file at `rel`; False when there is none."""
        path = self.root / rel
        parent, name = _parts(rel)[:-1], _parts(rel)[-1]
        try:
            with self._opened(parent, create=False) as fd:
                self._absent_or_regular(fd, name, path)
                os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            return False
        return True

    def remove_empty_folder(self, rel: str) -> None:
        """Delete the folder `rel` when it exists and is empty."""
        parent, name = _parts(rel)[:-1], _parts(rel)[-1]
        with suppress(FileNotFoundError), self._opened(parent, create=False) as fd:
            try:
                os.rmdir(name, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT, errno.ENOTDIR):
                    raise

    @contextmanager
    def _opened(self, parts: tuple[str, ...], create: bool) -> Iterator[int]:
        """A descriptor of the folder `parts` below the root, each step taken without following
        a link."""
        if create:
            os.makedirs(self.root, exist_ok=True)
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            here = self.root
            for part in parts:
                here = here / part
                if create:
                    with suppress(FileExistsError):
                        os.mkdir(part, dir_fd=fd)
                try:
                    sub = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise self._refused(here, True) from exc
                    raise
                os.close(fd)
                fd = sub
            yield fd
        finally:
            os.close(fd)

    def _absent_or_regular(self, fd: int, name: str, path: Path) -> None:
        try:
            mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISREG(mode):
            raise self._refused(path, False)

    def _refused(self, path: Path, folder: bool) -> WorkbenchError:
        kind = "folder" if folder else "regular file"
        if path.is_symlink():
            what = f"a link (to {os.readlink(path)}) inside {self.flag} {self.root}"
            remedy = f"remove the link (a real {kind.split()[-1]} is made in its place)"
        else:
            what = f"not a {kind}, inside {self.flag} {self.root}"
            remedy = "move it away"
        return fail(
            "link-in-out",
            f"{what}; nothing is written or deleted through a link",
            f"{remedy}, or choose another {self.flag}",
            file=str(path),
            source="environment",
        )


def _parts(rel: str) -> tuple[str, ...]:
    """The steps of a path inside the folder; one that could leave it is a bug of the caller."""
    parts = PurePath(rel).parts
    if not parts or PurePath(rel).is_absolute() or any(p in (".", "..") for p in parts):
        raise ValueError(f"not a path inside the folder: {rel!r}")
    return parts
