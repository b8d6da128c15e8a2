#!/usr/bin/python3
"""ctest deploy.dockerfile_image_root: without a docker daemon, check what can be checked of the
Dockerfile on the build machine (Debian 12, where the programs were built the way the image's
build stage builds them):

- a multi-stage build: a `debian:bookworm` build stage that runs scripts/install-deps.sh,
  scripts/build.sh and scripts/image-root.py; a `FROM scratch` runtime stage that copies that
  folder and does not run as root by default;
- the folder scripts/image-root.py makes from these programs is a whole system for them: each
  program, run inside it (chroot: nothing of this machine is visible), starts and answers
  --version (numa-probe, numa-dra-plugin) or --help (dra-allocate), and libpci finds its pci.ids.

Usage: check_dockerfile.py DOCKERFILE BUILD_DIR
"""

import os
import re
import subprocess
import sys
import tempfile

problems = []
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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


def check_stages(dockerfile):
    found = stages(dockerfile)
    if len(found) != 2:
        problems.append(f"Dockerfile: {len(found)} stages, not a build and a runtime stage")
        return
    args = dict(re.findall(r"^ARG\s+(\w+)=(\S+)", dockerfile, re.M))
    expand = lambda s: re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), s)
    (build_from, build), (runtime_from, runtime) = found
    if not re.fullmatch(r"FROM debian:bookworm AS build", expand(build_from), re.I):
        problems.append(f"Dockerfile: the build stage is {expand(build_from)!r}, not "
                        "debian:bookworm AS build")
    build_text = " ".join(build)
    for script in ("scripts/install-deps.sh", "scripts/build.sh",
                   "scripts/image-root.py --build-dir /build --out /image-root"):
        if script not in build_text:
            problems.append(f"Dockerfile: the build stage does not run {script}")
    if runtime_from.upper() != "FROM SCRATCH":
        problems.append(f"Dockerfile: the runtime stage is {runtime_from!r}, not FROM scratch")
    if "COPY --from=build /image-root/ /" not in runtime:
        problems.append("Dockerfile: the runtime stage does not COPY --from=build /image-root/ /")
    users = [i.split()[1] for i in runtime if i.upper().startswith("USER ")]
    if not users or users[-1].split(":")[0] in ("0", "root"):
        problems.append("Dockerfile: the runtime stage must end with a non-root USER")


def inside(root, argv):
    """argv run with `root` as its whole file system: chroot as root, else in a user namespace."""
    chroot = ["chroot", root] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", "chroot", root]
    return subprocess.run(chroot + argv, capture_output=True, text=True, timeout=60)


def check_image_root(build_dir):
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "root")
        made = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "scripts", "image-root.py"),
                               "--build-dir", build_dir, "--out", root], capture_output=True, text=True)
        if made.returncode != 0:
            problems.append(f"scripts/image-root.py failed: {made.stderr.strip()}")
            return
        for program, flag, expected in (("numa-probe", "--version", "numa-probe "),
                                         ("numa-dra-plugin", "--version", "numa-dra-plugin "),
                                         ("dra-allocate", "--help", "usage: dra-allocate")):
            ran = inside(root, [f"/usr/local/bin/{program}", flag])
            if ran.returncode != 0 or expected not in ran.stdout + ran.stderr:
                problems.append(f"{program} {flag} inside the image root: exit {ran.returncode}: "
                                f"{(ran.stderr or ran.stdout).strip()[:300]}")
        # libpci reads the device names from the image's own pci.ids.
        if not os.path.isfile(os.path.join(root, "usr", "share", "misc", "pci.ids")):
            problems.append("the image root has no /usr/share/misc/pci.ids")
        size = sum(os.path.getsize(os.path.join(base, f)) for base, _, files in os.walk(root)
                   for f in files)
        print(f"check_dockerfile: the image root is {size / 1e6:.1f} MB")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    check_stages(open(sys.argv[1]).read())
    check_image_root(sys.argv[2])
    if problems:
        for p in problems:
            print(p)
        print(f"check_dockerfile: {len(problems)} problem(s)")
        return 1
    print("check_dockerfile: the Dockerfile's stages are as expected and its image root runs the programs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
