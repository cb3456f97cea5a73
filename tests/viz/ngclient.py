"""Build the real Neuroglancer web client from its npm package, for the browser test.

The ``neuroglancer`` npm package ships ES modules, not a bundle, so this fetches it with
``npm pack``, installs its dependencies (minus the icon set it takes from a git repository,
whose ``?raw`` SVG imports are replaced by a blank icon), and bundles ``main.bundle.js``,
``chunk_worker.bundle.js`` and ``async_computation.bundle.js`` with esbuild.  The result is
cached outside the repository (``$ZV_TEST_CACHE`` or ``~/.cache/zarr-vectors-tests``) and is
never committed.  Layout of the returned directory::

    ng/index.html, ng/main.bundle.js, ng/main.bundle.css, ng/chunk_worker.bundle.js
    async_computation.bundle.js      # the client loads it from "../" of its main bundle
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

NEUROGLANCER_VERSION = "2.41.2"
ESBUILD_VERSION = "0.28.2"
_SKIP_DEPENDENCIES = {"ikonate"}  # a git dependency; only its SVG icons are imported

_BUILD_SCRIPT = """
import * as esbuild from "esbuild";
const blank = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"></svg>';
const raw = {
  name: "raw",
  setup(build) {
    build.onResolve({ filter: /\\?raw$/ }, (args) => ({ path: args.path, namespace: "raw" }));
    build.onLoad({ filter: /.*/, namespace: "raw" }, () => ({ contents: blank, loader: "text" }));
  },
};
const common = {
  bundle: true, format: "esm", minify: true, logLevel: "error", plugins: [raw],
  target: "es2022", loader: { ".wasm": "file", ".svg": "text", ".html": "file" },
  conditions: ["neuroglancer/datasource:none_by_default",
               "neuroglancer/datasource/precomputed:enabled"],
};
const lib = "node_modules/neuroglancer/lib/";
await esbuild.build({ ...common, outdir: "out/ng", entryPoints: {
  "main.bundle": lib + "main.bundle.js", "chunk_worker.bundle": lib + "chunk_worker.bundle.js" } });
await esbuild.build({ ...common, outdir: "out", entryPoints: {
  "async_computation.bundle": lib + "async_computation.bundle.js" } });
"""

_INDEX_HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>neuroglancer</title>
<link rel="stylesheet" href="main.bundle.css">
<style>html, body { margin: 0; padding: 0; height: 100%; overflow: hidden; }
#neuroglancer-container { position: absolute; inset: 0; }</style>
</head><body><div id="neuroglancer-container"></div>
<script type="module" src="main.bundle.js"></script></body></html>
"""


def cache_root() -> Path:
    base = os.environ.get("ZV_TEST_CACHE") or Path.home() / ".cache" / "zarr-vectors-tests"
    return Path(base) / f"neuroglancer-{NEUROGLANCER_VERSION}"


def _run(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")


def build_client() -> Path:
    """Return a directory holding a built Neuroglancer client (building it once)."""
    root = cache_root()
    site = root / "site"
    if (site / "ng" / "main.bundle.js").is_file():
        return site
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        raise RuntimeError("building the Neuroglancer client needs node and npm")
    work = root / f"build-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "package.json").write_text('{"name": "ng-build", "private": true, "type": "module"}')
    _run([npm, "pack", f"neuroglancer@{NEUROGLANCER_VERSION}", "--silent"], work)
    unpacked = work / "neuroglancer"
    with tarfile.open(work / f"neuroglancer-{NEUROGLANCER_VERSION}.tgz") as tar:
        for member in tar.getmembers():
            member.name = member.name.removeprefix("package/")
        tar.extractall(unpacked, filter="data")
    deps = json.loads((unpacked / "package.json").read_text())["dependencies"]
    specs = [f"{k}@{v}" for k, v in deps.items() if k not in _SKIP_DEPENDENCIES]
    install = [npm, "install", "--ignore-scripts", "--no-audit", "--no-fund", "--no-save"]
    _run([*install, f"esbuild@{ESBUILD_VERSION}", *specs], work)
    # placed after the install, which would prune a package it was not asked for
    unpacked.rename(work / "node_modules" / "neuroglancer")
    (work / "build.mjs").write_text(_BUILD_SCRIPT)
    _run([node, "build.mjs"], work)
    (work / "out" / "ng" / "index.html").write_text(_INDEX_HTML)
    shutil.rmtree(site, ignore_errors=True)
    (work / "out").rename(site)
    shutil.rmtree(work, ignore_errors=True)
    return site
