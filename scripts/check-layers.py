#!/usr/bin/python3
"""Checks the one-way arrows of docs/ARCHITECTURE.md: which library may use which.

    scripts/check-layers.py SOURCE_DIR

Every C++ file of a library (a folder of LIBRARIES below, its `tests/` subfolders excepted) may
include the public headers (`numadra/<name>/...`) of the libraries its arrows reach, directly or
through another library, and nothing else; a file never reaches into another folder with a
relative include; the third-party headers of SYSTEM_HEADERS appear only where their rule says;
and each library's CMakeLists.txt links only libraries its arrows reach. Test code (a library's
`tests/`, the top-level `tests/`) may use anything, but nothing outside it may use test code.

Prints one line per forbidden edge (file, line, what it uses, why) and exits 1; exits 0 when
there is none. scripts/check-layers_test.py proves that it fails on each kind of edge.
"""

import pathlib
import posixpath
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "lib"))
from source_tree import source_tree_files  # noqa: E402

# folder -> (header name under include/numadra/, the libraries its arrows point at directly).
LIBRARIES = {
    # shared by both sides
    "common/core": ("common", []),
    "common/api": ("api", ["common/core"]),
    "common/documents": ("documents", ["common/core"]),
    # the node
    "discovery": ("discovery", ["common/core"]),
    "topology": ("topology", ["discovery"]),
    "cdi": ("cdi", ["discovery", "common/api"]),
    "metadata": ("metadata", ["cdi", "common/api"]),
    "node/claims": ("claims", ["common/core"]),
    "node/state": ("state", ["common/core"]),
    "node/metrics": ("metrics", ["common/core"]),
    "node/kube": ("kube", ["common/core"]),
    "node/slices": ("slices", ["topology", "discovery", "common/api"]),
    "node/prepare": ("prepare", ["cdi", "metadata", "node/state", "node/slices", "node/metrics",
                                 "node/claims"]),
    "health": ("health", ["node/claims", "node/slices"]),
    "node/nri": ("nri", ["cdi", "node/metrics"]),
    "plugin": ("plugin", ["node/claims"]),
    "node/probe": ("probe", ["node/slices"]),
    "node/daemon": ("daemon", ["plugin", "node/nri", "node/prepare", "health", "node/kube",
                               "node/probe", "common/documents"]),
    # the cluster
    "cluster/cel": ("cel", ["common/core"]),
    "cluster/dracel": ("dracel", ["cluster/cel", "common/api"]),
    "cluster/allocator": ("allocator", ["cluster/dracel", "common/documents"]),
    # test infrastructure: used by tests only
    "tests/support": ("testing", None),
    "tests/fakes/apiserver": ("fakes", None),
}

# Third-party headers that belong to one part of the tree: (pattern, folders allowed, why).
SYSTEM_HEADERS = [
    (re.compile(r"^grpc"), {"plugin"}, "gRPC is the kubelet's protocol: plugin/ adapts it"),
    (re.compile(r"^nghttp2/"), {"plugin"}, "HTTP/2 carries the kubelet's gRPC: plugin/grpc serves it"),
    (re.compile(r"^curl/"), {"node/kube"}, "libcurl is the API client's transport"),
    (re.compile(r"^hwloc"), set(), "hwloc only cross-checks discovery in its tests"),
    (re.compile(r"^httplib\.h$"), set(), "cpp-httplib serves the tests' fake API server only"),
    (re.compile(r"^yaml-cpp/"), {"common/documents", "node/kube"},
     "YAML is read in one place (common/documents; node/kube for kubeconfig files)"),
]

# CMake targets that are not named after their folder's header: target -> folder.
TARGET_FOLDERS = {
    "numadra_plugin_proto": "plugin",
    "numadra_plugin_proto_messages": "plugin",
    "numadra_grpc_server": "plugin",
    "numadra_nri_proto": "node/nri",
    "numadra_fake_apiserver": "tests/fakes/apiserver",
    "numadra_testing": "tests/support",
}

# Test code inside a library's folder besides its tests/: the CEL project's conformance suite runs
# the whole DRA environment (cluster/dracel) against cel/'s tests.
TEST_FOLDERS = {"cluster/cel/conformance"}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".cc"}


def reach(folder, seen=None):
    """Every library folder `folder` may use: itself and what its arrows reach, transitively."""
    seen = set() if seen is None else seen
    if folder in seen:
        return seen
    seen.add(folder)
    for dep in LIBRARIES[folder][1] or []:
        reach(dep, seen)
    return seen


def owner(relative):
    """The library folder a path belongs to (the longest match), or None."""
    best = None
    for folder in LIBRARIES:
        if relative == folder or relative.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def is_test_code(relative, folder):
    if relative.startswith("tests/") or any(relative.startswith(f + "/") for f in TEST_FOLDERS):
        return True
    inside = relative[len(folder) + 1:]
    return inside.startswith("tests/") or "/tests/" in inside


HEADER_OWNERS = {name: folder for folder, (name, _) in LIBRARIES.items()}


def check_includes(root, relative, folder, problems):
    test_code = is_test_code(relative, folder)
    allowed = reach(folder)
    text = (root / relative).read_text(errors="replace")
    for number, line in enumerate(text.splitlines(), 1):
        match = INCLUDE.match(line)
        if not match:
            continue
        bracket, header = match.groups()
        where = f"{relative}:{number}"
        if header.startswith("numadra/"):
            name = header.split("/")[1]
            used = HEADER_OWNERS.get(name)
            if used is None:
                problems.append(f"{where}: includes {header}: no library owns numadra/{name}/")
            elif LIBRARIES[used][1] is None and not test_code:
                problems.append(f"{where}: includes {header}: {used}/ is test code, "
                                f"{folder}/ is not")
            elif not test_code and used not in allowed:
                problems.append(f"{where}: includes {header}: {folder}/ may not use {used}/ "
                                f"(docs/ARCHITECTURE.md: {folder} reaches "
                                f"{', '.join(sorted(allowed - {folder})) or 'nothing'})")
            continue
        if bracket == '"' and ".." in pathlib.PurePosixPath(header).parts and \
                owner(posixpath.normpath(posixpath.join(posixpath.dirname(relative), header))) != folder:
            problems.append(f"{where}: includes \"{header}\": another folder's private file "
                            f"(use its public header)")
            continue
        if test_code:
            continue
        for pattern, folders, why in SYSTEM_HEADERS:
            if pattern.search(header) and folder not in folders:
                problems.append(f"{where}: includes <{header}> in {folder}/: {why}")


def target_folder(target):
    if target in TARGET_FOLDERS:
        return TARGET_FOLDERS[target]
    return HEADER_OWNERS.get(target[len("numadra_"):])


LIBRARY_CALL = re.compile(r"numadra_library\(\s*(\w+)(.*?)\)", re.S)
LINK_CALL = re.compile(r"target_link_libraries\(\s*(\w+)(.*?)\)", re.S)


def check_links(root, folder, problems):
    """The numadra_* libraries a production library of `folder` links must be within reach."""
    cmake = root / folder / "CMakeLists.txt"
    if not cmake.exists() or LIBRARIES[folder][1] is None:
        return
    text = re.sub(r"#[^\n]*", "", cmake.read_text())
    allowed = reach(folder)
    calls = [(m.group(1), m.group(2)) for m in LIBRARY_CALL.finditer(text)]
    calls += [(m.group(1), m.group(2)) for m in LINK_CALL.finditer(text)]
    for target, arguments in calls:
        if "for_tests" in target or target_folder(target) != folder:
            continue  # a test helper, or a program (tests link as they need)
        for dep in re.findall(r"\bnumadra_\w+", arguments):
            if dep in ("numadra_target_defaults",) or target_folder(dep) == folder:
                continue
            used = target_folder(dep)
            if used is None:
                problems.append(f"{folder}/CMakeLists.txt: {target} links {dep}: "
                                f"not a library of the layout")
            elif LIBRARIES[used][1] is None:
                problems.append(f"{folder}/CMakeLists.txt: {target} links {dep}: test code")
            elif used not in allowed:
                problems.append(f"{folder}/CMakeLists.txt: {target} links {dep}: "
                                f"{folder}/ may not use {used}/ (docs/ARCHITECTURE.md)")


def source_files(root):
    """The C++ files of the tree, new ones not yet added included."""
    return sorted(root / p for p in source_tree_files(root, untracked=True)
                  if p.suffix in SOURCE_SUFFIXES and (root / p).is_file())


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1])
    problems = []
    for folder in LIBRARIES:
        if not (root / folder).is_dir():
            problems.append(f"{folder}/: missing (docs/ARCHITECTURE.md names it)")
    files = source_files(root)
    for path in files:
        relative = path.relative_to(root).as_posix()
        folder = owner(relative)
        if folder is None:
            if not relative.startswith("tests/"):
                problems.append(f"{relative}: in no library of docs/ARCHITECTURE.md's layout")
            continue
        check_includes(root, relative, folder, problems)
    for folder in LIBRARIES:
        if (root / folder).is_dir():
            check_links(root, folder, problems)
    for problem in problems:
        print(problem)
    if problems:
        print(f"check-layers: {len(problems)} forbidden edge(s)", file=sys.stderr)
        return 1
    print(f"check-layers: {len(files)} files, {len(LIBRARIES)} libraries, every arrow one way")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
