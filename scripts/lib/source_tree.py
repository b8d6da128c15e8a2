"""The files of a source tree, as the repository checks read them (check-self-contained.py,
check-layers.py): what git tracks, and with `untracked` also what it would track (new files not
ignored); outside a git checkout every file, build folders left out."""

import pathlib
import re
import subprocess


def source_tree_files(root, untracked=False):
    """Paths relative to root."""
    command = ["git", "-C", str(root), "ls-files", "-z"]
    if untracked:
        command += ["--cached", "--others", "--exclude-standard"]
    try:
        listed = subprocess.run(command, check=True, capture_output=True).stdout.decode()
        return [pathlib.Path(name) for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        return [p.relative_to(root) for p in pathlib.Path(root).rglob("*")
                if p.is_file() and not re.match(r"build($|-)|\.", p.relative_to(root).parts[0])]
