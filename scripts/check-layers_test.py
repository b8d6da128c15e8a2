#!/usr/bin/python3
"""scripts/check-layers.py fails on each kind of forbidden edge and passes the allowed ones.

Each case builds a small tree with the layout's folders, adds one file (or CMakeLists.txt) and
runs the checker on it; a case names the edge and whether the checker must refuse it.
"""

import pathlib
import subprocess
import sys
import tempfile

CHECKER = pathlib.Path(__file__).resolve().parent / "check-layers.py"
sys.path.insert(0, str(CHECKER.parent))
LAYOUT = __import__("check-layers").LIBRARIES

# (name, file, content, refused, what the message must say)
CASES = [
    ("the domain uses the kubelet's gRPC adapter", "node/prepare/x.cpp",
     '#include "numadra/plugin/server.hpp"\n', True, "node/prepare/ may not use plugin/"),
    ("the domain uses the claim types", "node/prepare/x.cpp",
     '#include "numadra/claims/claims.hpp"\n', False, ""),
    ("health uses gRPC", "health/x.cpp", "#include <grpcpp/grpcpp.h>\n", True,
     "gRPC is the kubelet's protocol"),
    ("the cluster side uses the node's API client", "cluster/allocator/x.cpp",
     '#include "numadra/kube/client.hpp"\n', True, "cluster/allocator/ may not use node/kube/"),
    ("the node side uses CEL", "node/daemon/x.cpp", '#include "numadra/cel/value.hpp"\n', True,
     "node/daemon/ may not use cluster/cel/"),
    ("an arrow reached through another library", "node/probe/x.cpp",
     '#include "numadra/discovery/machine.hpp"\n', False, ""),
    ("production code uses the fake API server", "node/daemon/x.cpp",
     '#include "numadra/fakes/apiserver.hpp"\n', True, "test code"),
    ("a test uses the fake API server", "node/daemon/tests/x_test.cpp",
     '#include "numadra/fakes/apiserver.hpp"\n', False, ""),
    ("a relative include into another folder", "node/daemon/x.cpp",
     '#include "../../plugin/dra_service.hpp"\n', True, "another folder's private file"),
    ("a test includes its own library's private header", "node/kube/tests/x_test.cpp",
     '#include "../response_body.hpp"\n', False, ""),
    ("hwloc in production code", "discovery/x.cpp", "#include <hwloc.h>\n", True,
     "hwloc only cross-checks"),
    ("a header no library owns", "common/core/x.cpp", '#include "numadra/nowhere/x.hpp"\n',
     True, "no library owns numadra/nowhere/"),
    ("a link the arrows do not allow", "health/CMakeLists.txt",
     "numadra_library(numadra_health SOURCES a.cpp DEPS numadra_plugin)\n", True,
     "numadra_health links numadra_plugin"),
    ("a link the arrows allow", "health/CMakeLists.txt",
     "numadra_library(numadra_health SOURCES a.cpp DEPS numadra_claims numadra_slices)\n", False,
     ""),
    ("a source file outside the layout", "tools/x.cpp", "int main() {}\n", True,
     "in no library"),
]


def run_case(name, relative, content, refused, expected):
    with tempfile.TemporaryDirectory() as directory:
        root = pathlib.Path(directory)
        for folder in LAYOUT:
            (root / folder).mkdir(parents=True, exist_ok=True)
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        done = subprocess.run([sys.executable, str(CHECKER), str(root)], capture_output=True,
                              text=True)
        output = done.stdout + done.stderr
        if refused and (done.returncode != 1 or expected not in output):
            return f"{name}: not refused as expected (exit {done.returncode}):\n{output}"
        if not refused and done.returncode != 0:
            return f"{name}: refused but allowed by docs/ARCHITECTURE.md:\n{output}"
    return None


def main():
    failures = [f for f in (run_case(*case) for case in CASES) if f]
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"check-layers_test: {len(CASES) - len(failures)}/{len(CASES)} cases as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
