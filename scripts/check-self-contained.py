#!/usr/bin/python3
"""Fails when a file the build, the demo or a test reads names something outside the checkout.

Usage: check-self-contained.py SOURCE_DIR

Every build and test input (C++, CMake, shell, Python, Go, test data listings) is searched for
paths that only exist on the machines the project was developed on: the reference folder beside
the checkout, and absolute paths into a developer's work or home folder (FORBIDDEN below). Data
from outside the checkout may only come in through an environment variable naming its folder
(NUMADRA_HWLOC_GATHERED_DIR), which .ci/run may set; that file is the one exception.

Exit status: 0 clean, 1 a reference was found (each is printed as FILE:LINE: TEXT).
"""

import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "lib"))
from source_tree import source_tree_files  # noqa: E402

INPUT_SUFFIXES = {".cpp", ".hpp", ".h", ".cmake", ".sh", ".py", ".go", ".mod", ".txt", ".yaml",
                  ".yml", ".json", ".in", ""}
# Folders that are not inputs of anything: documentation is allowed to say where data came from.
SKIPPED_PARTS = {".git", "docs"}
# .ci/run sets NUMADRA_HWLOC_GATHERED_DIR when the workplace has the data; this file names the
# patterns it looks for.
ALLOWED_FILES = {".ci/run", "scripts/check-self-contained.py"}
FORBIDDEN = re.compile(r"\.\./shared\b|(?<![\w.])/work/|(?<![\w.])/root/")


def is_input(relative):
    if relative.as_posix() in ALLOWED_FILES or relative.name.endswith(".md"):
        return False
    if any(part in SKIPPED_PARTS or part.startswith("build") for part in relative.parts[:-1]):
        return False
    return relative.suffix in INPUT_SUFFIXES or relative.name == "CMakeLists.txt"


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    source = pathlib.Path(sys.argv[1])
    found = []
    checked = 0
    for relative in source_tree_files(source):
        if not is_input(relative):
            continue
        try:
            text = (source / relative).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary data (corpora, archives) names no paths
        checked += 1
        for number, line in enumerate(text.splitlines(), 1):
            if FORBIDDEN.search(line):
                found.append(f"{relative}:{number}: {line.strip()}")
    for line in found:
        print(line)
    if found:
        print(f"check-self-contained: {len(found)} references to paths outside the checkout "
              f"in {checked} build and test inputs", file=sys.stderr)
        return 1
    print(f"check-self-contained: {checked} build and test inputs name nothing outside the "
          "checkout")
    return 0


if __name__ == "__main__":
    sys.exit(main())
