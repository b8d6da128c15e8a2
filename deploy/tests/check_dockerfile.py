#!/usr/bin/python3
"""ctest deploy.dockerfile_runtime_libraries: without a docker daemon, check what can be checked
of the Dockerfile on the build machine (Debian 12, where the binaries were built the way the
image's build stage builds them):

- a multi-stage build: a `debian:bookworm` build stage that runs scripts/install-deps.sh and
  scripts/build.sh, a `debian:bookworm-slim` runtime stage that copies the three programs and
  does not run as root by default;
- the runtime stage installs, for every shared library a program links directly (readelf -d
  NEEDED), the Debian package that owns it here (dpkg -S), unless the slim image has it;
- every package it installs exists (is installed on this machine, under that exact name).

Usage: check_dockerfile.py DOCKERFILE BINARY...
"""

import re
import subprocess
import sys

# Packages of debian:bookworm-slim itself that the programs link (apt depends on libstdc++6).
IN_SLIM_IMAGE = {"libc6", "libgcc-s1", "libstdc++6"}
PROGRAMS = ("numa-dra-plugin", "numa-probe", "dra-allocate")

problems = []


def stages(dockerfile):
    """[(from line, [instructions])] with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", "\n".join(line for line in dockerfile.splitlines()
                                          if not line.lstrip().startswith("#")))
    result = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.upper().startswith("FROM "):
            result.append((line, []))
        elif result:
            result[-1][1].append(line)
    return result


def needed_libraries(binary):
    out = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True, check=True)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out.stdout)


def owning_package(library):
    out = subprocess.run(["dpkg", "-S", f"*/{library}"], capture_output=True, text=True)
    packages = set()
    for line in out.stdout.splitlines():
        if line.startswith(("diversion", "local diversion")):
            continue
        package = line.split(":", 1)[0].split(",")[0].strip()
        arch_free = line.split(": ", 1)[0]
        if "-dev" in arch_free or "lib32" in arch_free or "i386" in arch_free:
            continue
        packages.add(package)
    return packages


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    dockerfile = open(sys.argv[1]).read()
    binaries = sys.argv[2:]
    found = stages(dockerfile)
    if len(found) < 2:
        problems.append("Dockerfile: not a multi-stage build")
        return report()
    args = dict(re.findall(r"^ARG\s+(\w+)=(\S+)", dockerfile, re.M))
    expand = lambda s: re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), s)
    build_from, build = found[0]
    runtime_from, runtime = found[-1]
    if not re.fullmatch(r"FROM debian:bookworm AS build", expand(build_from), re.I):
        problems.append(f"Dockerfile: the build stage is {expand(build_from)!r}, not "
                        "debian:bookworm AS build")
    if not re.fullmatch(r"FROM debian:bookworm-slim", expand(runtime_from), re.I):
        problems.append(f"Dockerfile: the runtime stage is {expand(runtime_from)!r}, not "
                        "debian:bookworm-slim")
    build_text = " ".join(build)
    for script in ("scripts/install-deps.sh", "scripts/build.sh"):
        if script not in build_text:
            problems.append(f"Dockerfile: the build stage does not run {script}")
    runtime_text = "\n".join(runtime)
    copies = [i for i in runtime if i.upper().startswith("COPY --FROM=BUILD")]
    for program in PROGRAMS:
        if not any(program in c for c in copies):
            problems.append(f"Dockerfile: the runtime stage does not copy {program}")
    users = re.findall(r"^USER\s+(\S+)", runtime_text, re.M)
    if not users or users[-1].split(":")[0] in ("0", "root"):
        problems.append("Dockerfile: the runtime stage must end with a non-root USER")
    installed = set()
    for instruction in runtime:
        match = re.search(r"apt-get install (.*?)(&&|$)", instruction)
        if match:
            installed |= {w for w in match.group(1).split() if not w.startswith("-")}
    if not installed:
        problems.append("Dockerfile: the runtime stage installs no packages")

    needed_packages = {}
    for binary in binaries:
        for library in needed_libraries(binary):
            owners = owning_package(library)
            if not owners:
                problems.append(f"{binary}: no Debian package owns {library}")
                continue
            for owner in owners:
                needed_packages.setdefault(owner, set()).add(library)
            if not owners & (installed | IN_SLIM_IMAGE):
                problems.append(f"{binary} links {library} (package {', '.join(sorted(owners))}),"
                                " which the runtime stage does not install")
    for package in sorted(installed):
        status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package],
                                capture_output=True, text=True)
        if "install ok installed" not in status.stdout:
            problems.append(f"Dockerfile: {package} is not a package installed on this Debian "
                            "machine (misspelt, or not Debian 12's name)")
    unused = installed - set(needed_packages) - {"pci.ids", "ca-certificates"}
    for package in sorted(unused):
        problems.append(f"Dockerfile: {package} is installed but no program links its libraries")
    return report(len(needed_packages))


def report(count=0):
    if problems:
        for p in problems:
            print(p)
        print(f"check_dockerfile: {len(problems)} problem(s)")
        return 1
    print(f"check_dockerfile: the runtime stage covers the {count} packages the programs link")
    return 0


if __name__ == "__main__":
    sys.exit(main())
