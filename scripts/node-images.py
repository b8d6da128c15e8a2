#!/usr/bin/env python3
"""Builds the node tier's container images here, without any registry, as OCI archives that
`ctr -n k8s.io images import` reads (scripts/node-e2e.sh).

    scripts/node-images.py --build-dir build --cache DIR --out DIR

- pause: the sandbox image, a static program of a few lines of C (gcc -static) that sleeps until
  a signal and reaps children, as registry.k8s.io/pause does;
- shell: the workload image, Debian's busybox-static with a link per applet;
- driver: the repository's Dockerfile, its runtime stage made the Dockerfile's way: `FROM
  scratch` and the folder scripts/image-root.py assembles (the stage's build step runs the same
  script) from the three programs scripts/build.sh built on this Debian 12 and the libraries
  they load, with the stage's USER, ENTRYPOINT, CMD and LABELs. An instruction of the stage this
  builder does not know stops it, so the image cannot drift from the Dockerfile unnoticed.

pause and shell are cached in --cache by their inputs; the driver's layer is made each run (a
few seconds). Each image is one layer per step, uncompressed. images.json in --out names each
archive, its image name and its sizes (the layers as stored, and gzipped as a registry would
serve them).
"""

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

PAUSE_C = r"""
/* The pod sandbox's process: sleeps until SIGINT or SIGTERM, reaps what is reparented to it. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
static void stop(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, 0, WNOHANG) > 0) {} }
int main(void) {
    signal(SIGINT, stop);
    signal(SIGTERM, stop);
    signal(SIGCHLD, reap);
    for (;;) pause();
}
"""

def fail(message):
    sys.exit(f"node-images: {message}")


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def gzipped_size(path):
    """The layer's size gzipped (level 6, as registries store layers)."""
    size = 0

    class Counter(io.RawIOBase):
        def write(self, b):
            nonlocal size
            size += len(b)
            return len(b)

    with open(path, "rb") as f, gzip.GzipFile(fileobj=Counter(), mode="wb", compresslevel=6, mtime=0) as z:
        shutil.copyfileobj(f, z, 1 << 20)
    return size


# ---- the Dockerfile's runtime stage -------------------------------------------------------------

def dockerfile_instructions(path):
    """(instruction, arguments) of every line, continuations joined, comments dropped."""
    lines, current = [], ""
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not current and line.lstrip().startswith("#"):
                continue
            if line.lstrip().startswith("#"):  # a comment inside a continued instruction
                continue
            if line.endswith("\\"):
                current += line[:-1] + " "
                continue
            current += line
            if current.strip():
                word, _, rest = current.strip().partition(" ")
                lines.append((word.upper(), rest.strip()))
            current = ""
    return lines


def runtime_stage(path):
    """The last stage of the Dockerfile: FROM scratch, the image root copied from the build stage,
    its user, entrypoint, cmd and labels; anything else in it is an error naming the
    instruction."""
    instructions = dockerfile_instructions(path)
    starts = [i for i, (word, _) in enumerate(instructions) if word == "FROM"]
    if not starts:
        fail(f"{path}: no FROM")
    stage = {"user": None, "entrypoint": None, "cmd": None, "labels": {}, "root": None,
             "from": instructions[starts[-1]][1]}
    if stage["from"] != "scratch":
        fail(f"{path}: the runtime stage starts FROM {stage['from']}, not scratch")
    for word, rest in instructions[starts[-1] + 1:]:
        if word == "COPY":
            words = shlex.split(rest)
            if words != ["--from=build", "/image-root/", "/"]:
                fail(f"{path}: COPY {rest!r}: only COPY --from=build /image-root/ / is known")
            stage["root"] = "/image-root/"
        elif word == "USER":
            stage["user"] = rest
        elif word in ("ENTRYPOINT", "CMD"):
            stage[word.lower()] = json.loads(rest)
        elif word == "LABEL":
            for item in shlex.split(rest):
                key, _, value = item.partition("=")
                stage["labels"][key] = value
        else:
            fail(f"{path}: the runtime stage has {word}, which this builder does not know")
    if not stage["root"]:
        fail(f"{path}: the runtime stage copies no image root")
    return stage


# ---- layers and OCI archives --------------------------------------------------------------------

def tar_of_tree(root, out):
    """A deterministic tar of the folder (sorted, mtime 0, root-owned)."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for base, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                full = os.path.join(base, name)
                info = tar.gettarinfo(full, arcname=os.path.relpath(full, root))
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "root", "root"
                if info.isreg():
                    with open(full, "rb") as f:
                        tar.addfile(info, f)
                else:
                    tar.addfile(info)


def write_oci_archive(out, name, layers, config):
    """An OCI image layout as a tar: one uncompressed layer per tar in `layers`, the image config
    (`config`: User, Entrypoint, Cmd, Env, Labels), named `name` for ctr."""
    blobs = []  # (digest, path or bytes)
    layer_descriptors, diff_ids = [], []
    for layer in layers:
        digest = "sha256:" + sha256_file(layer)
        layer_descriptors.append({"mediaType": "application/vnd.oci.image.layer.v1.tar",
                                  "digest": digest, "size": os.path.getsize(layer)})
        diff_ids.append(digest)
        blobs.append((digest, layer))
    image_config = json.dumps({
        "architecture": "amd64", "os": "linux", "config": config,
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }, sort_keys=True).encode()
    config_digest = "sha256:" + hashlib.sha256(image_config).hexdigest()
    blobs.append((config_digest, image_config))
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest,
                   "size": len(image_config)},
        "layers": layer_descriptors,
    }, sort_keys=True).encode()
    manifest_digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    blobs.append((manifest_digest, manifest))
    index = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "digest": manifest_digest, "size": len(manifest),
                       "annotations": {"io.containerd.image.name": name,
                                       "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]}}],
    }, sort_keys=True).encode()
    tmp = out + ".tmp"
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
        def add_bytes(arcname, data):
            info = tarfile.TarInfo(arcname)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        add_bytes("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add_bytes("index.json", index)
        for digest, blob in blobs:
            arcname = "blobs/sha256/" + digest.split(":", 1)[1]
            if isinstance(blob, bytes):
                add_bytes(arcname, blob)
            else:
                tar.add(blob, arcname=arcname)
    os.replace(tmp, out)
    return {"name": name, "archive": out,
            "layers_bytes": sum(d["size"] for d in layer_descriptors)}


# ---- the images ---------------------------------------------------------------------------------

def cached(cache, key, build):
    """The cached file for `key`, built by build(path) when missing."""
    path = os.path.join(cache, key)
    if not os.path.exists(path):
        os.makedirs(cache, exist_ok=True)
        tmp = path + ".tmp"
        build(tmp)
        os.replace(tmp, path)
    return path


def pause_layer(cache):
    key = "pause-" + hashlib.sha256(PAUSE_C.encode()).hexdigest()[:12] + ".tar"

    def build(out):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "pause.c")
            with open(src, "w") as f:
                f.write(PAUSE_C)
            os.makedirs(os.path.join(tmp, "root"))
            subprocess.run(["gcc", "-static", "-Os", "-s", "-o", os.path.join(tmp, "root", "pause"), src],
                           check=True)
            tar_of_tree(os.path.join(tmp, "root"), out)
    return cached(cache, key, build)


def shell_layer(cache):
    busybox = "/bin/busybox"
    if not os.path.exists(busybox):
        fail(f"{busybox} is missing (Debian: apt-get install busybox-static)")
    key = "shell-" + sha256_file(busybox)[:12] + ".tar"

    def build(out):
        with tempfile.TemporaryDirectory() as tmp:
            root = os.path.join(tmp, "root")
            for folder in ("bin", "tmp", "etc", "proc", "sys", "dev"):
                os.makedirs(os.path.join(root, folder))
            shutil.copy(busybox, os.path.join(root, "bin", "busybox"))
            applets = subprocess.run([busybox, "--list"], check=True, capture_output=True, text=True)
            for applet in applets.stdout.split():
                if applet != "busybox":
                    os.symlink("busybox", os.path.join(root, "bin", applet))
            with open(os.path.join(root, "etc", "passwd"), "w") as f:
                f.write("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")
            tar_of_tree(root, out)
    return cached(cache, key, build)


def driver_layer(source_dir, build_dir, out):
    """The image root, as the build stage's scripts/image-root.py makes it."""
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "root")
        subprocess.run([sys.executable, os.path.join(source_dir, "scripts", "image-root.py"),
                        "--build-dir", build_dir, "--out", root], check=True)
        tar_of_tree(root, out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source-dir", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--cache", required=True, help="folder of the cached layers")
    parser.add_argument("--out", required=True, help="folder for the archives and images.json")
    parser.add_argument("--driver-image", default="localhost/numa-dra-driver:0.1.0")
    parser.add_argument("--sizes", action="store_true", help="also the layers' gzipped sizes")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    stage = runtime_stage(os.path.join(args.source_dir, "Dockerfile"))

    images = {}
    images["pause"] = write_oci_archive(os.path.join(args.out, "pause.tar"), "localhost/numadra/pause:e2e",
                                        [pause_layer(args.cache)],
                                        {"Entrypoint": ["/pause"], "User": "65535:65535"})
    images["shell"] = write_oci_archive(os.path.join(args.out, "shell.tar"), "localhost/numadra/shell:e2e",
                                        [shell_layer(args.cache)],
                                        {"Cmd": ["/bin/sh"], "Env": ["PATH=/bin"]})
    layer = os.path.join(args.out, "driver-root.tar")
    driver_layer(args.source_dir, args.build_dir, layer)
    # The PATH docker build gives an image built FROM scratch.
    config = {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
              "User": stage["user"], "Entrypoint": stage["entrypoint"], "Cmd": stage["cmd"],
              "Labels": stage["labels"]}
    images["driver"] = write_oci_archive(os.path.join(args.out, "driver.tar"), args.driver_image,
                                         [layer], config)
    if args.sizes:
        images["driver"]["gzipped_bytes"] = gzipped_size(layer)
    with open(os.path.join(args.out, "images.json"), "w") as f:
        json.dump(images, f, indent=2, sort_keys=True)
    for what, image in images.items():
        sizes = f"{image['layers_bytes'] / 1e6:.1f} MB"
        if "gzipped_bytes" in image:
            sizes += f", {image['gzipped_bytes'] / 1e6:.1f} MB gzipped"
        print(f"node-images: {what}: {image['name']} ({sizes}) in {image['archive']}")


if __name__ == "__main__":
    main()
