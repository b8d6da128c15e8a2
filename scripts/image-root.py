#!/usr/bin/python3
"""Assembles the driver image's whole file system in a folder: the three programs (debug
sections stripped) and exactly what they need to run, taken from this Debian machine, for a
`FROM scratch` image (the Dockerfile's build stage runs it; scripts/node-images.py runs it for
the node tier, on the same Debian 12 where the programs were built).

    scripts/image-root.py --build-dir build --out DIR

What goes in, and why nothing else:
- /usr/local/bin/{numa-dra-plugin,numa-probe,dra-allocate}: `objcopy --strip-debug`;
- every shared library they load (the dynamic loader's own answer, `ldd`, so libraries needed by
  libraries are in too) and the loader itself, each at the path the loader looks it up by;
  glibc 2.36 has its name-service modules built in, so host names resolve without more files;
- /usr/share/misc/pci.ids (libpci names the devices with it), the CA bundle
  /etc/ssl/certs/ca-certificates.crt (--kubeconfig files pointing at a public CA);
- /etc/passwd and /etc/group naming root and the image's user 65532 (nonroot), an empty /tmp.
No shell, no package manager: the daemon runs nothing but itself. A library the loader cannot
find here is an error naming the program and the library.
"""

import argparse
import os
import shutil
import subprocess
import sys

PROGRAMS = ("numa-dra-plugin", "numa-probe", "dra-allocate")
DATA_FILES = ("/usr/share/misc/pci.ids", "/etc/ssl/certs/ca-certificates.crt")
PASSWD = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
GROUP = "root:x:0:\nnonroot:x:65532:\n"


def fail(message):
    sys.exit(f"image-root: {message}")


def loaded_libraries(program):
    """The paths the dynamic loader maps for `program`, the loader included."""
    result = subprocess.run(["ldd", program], capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"ldd {program}: {result.stderr.strip() or result.stdout.strip()}")
    paths = []
    for line in result.stdout.splitlines():
        line = line.strip()
        if "not found" in line:
            fail(f"{program} needs {line.split()[0]}, which the loader does not find here")
        if "=>" in line:
            target = line.split("=>", 1)[1].split("(")[0].strip()
            if target:
                paths.append(target)
        elif line.startswith("/"):
            paths.append(line.split()[0])  # the loader, by its PT_INTERP path
    return paths


def copy_file(source, root, path=None, mode=None):
    """source's content (symbolic links followed) at `path` (default: source's own path)."""
    destination = os.path.join(root, (path or source).lstrip("/"))
    os.makedirs(os.path.dirname(destination), exist_ok=True)
    shutil.copyfile(os.path.realpath(source), destination)
    os.chmod(destination, mode if mode is not None else os.stat(os.path.realpath(source)).st_mode & 0o777)


def write_text(root, path, text, mode=0o644):
    destination = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(destination), exist_ok=True)
    with open(destination, "w") as f:
        f.write(text)
    os.chmod(destination, mode)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", required=True, help="the build folder (its bin/ has the programs)")
    parser.add_argument("--out", required=True, help="an empty or missing folder")
    args = parser.parse_args()
    if os.path.exists(args.out) and os.listdir(args.out):
        fail(f"{args.out} is not empty")
    os.makedirs(args.out, exist_ok=True)
    libraries = set()
    for program in PROGRAMS:
        source = os.path.join(args.build_dir, "bin", program)
        if not os.path.isfile(source):
            fail(f"{source} is missing (scripts/build.sh --target {program})")
        destination = os.path.join(args.out, "usr", "local", "bin", program)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        subprocess.run(["objcopy", "--strip-debug", source, destination], check=True)
        libraries.update(loaded_libraries(source))
    for library in sorted(libraries):
        copy_file(library, args.out)
    for data in DATA_FILES:
        if not os.path.isfile(data):
            fail(f"{data} is missing on this machine (Debian: apt-get install pci.ids ca-certificates)")
        copy_file(data, args.out, mode=0o644)
    write_text(args.out, "/etc/passwd", PASSWD)
    write_text(args.out, "/etc/group", GROUP)
    os.makedirs(os.path.join(args.out, "tmp"), exist_ok=True)
    os.chmod(os.path.join(args.out, "tmp"), 0o1777)
    print(f"image-root: {len(PROGRAMS)} programs, {len(libraries)} libraries in {args.out}")


if __name__ == "__main__":
    main()
