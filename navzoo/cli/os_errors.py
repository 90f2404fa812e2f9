"""One line for an error of the file system, naming the path and what to do about it, instead of a
traceback: a full or read-only disk, a permission, a file where a folder should be."""

import errno

_WHAT_TO_DO = {
    errno.ENOSPC: "the disk is full: free some space, or write somewhere else",
    errno.EDQUOT: "the disk quota is used up: free some space, or write somewhere else",
    errno.EROFS: "the file system is read-only: choose a folder you can write to",
    errno.EACCES: "permission denied: choose a folder you can write to, or change its permissions",
    errno.EPERM: "permission denied: choose a folder you can write to, or change its permissions",
    errno.ENOTDIR: "a part of this path is a file, not a folder: choose another path",
    errno.EISDIR: "this is a folder where a file was expected: choose another path",
    errno.EEXIST: "a file or folder is in the way: move it, or choose another path",
    errno.ENOTEMPTY: "the folder is not empty: move what it holds, or choose another path",
    errno.ENOENT: "there is no such file or folder: check the path",
}


def describe_os_error(err: OSError) -> str:
    """`path: what happened and what to do`, or the system's own words for a rarer error."""
    what = _WHAT_TO_DO.get(err.errno) if err.errno is not None else None
    what = what or (err.strerror or str(err))
    paths = [p for p in (err.filename, err.filename2) if p is not None]
    return f"{' -> '.join(str(p) for p in paths)}: {what}" if paths else what
