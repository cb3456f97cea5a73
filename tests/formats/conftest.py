"""Real files for round-trip tests: committed copies, installed packages, cached downloads.

Small files are committed under ``tests/data`` (licences beside them).  The rest ship inside
other packages' distributions: nibabel's ``tests/data`` is installed with nibabel; laspy's and
meshio's test files are in their sdists, pyvista's example meshes, navis's example neurons
(SWC, OBJ) and dipy's ``data/files`` in their wheels, which are fetched once with ``pip download --no-deps`` into a cache directory (``ZV_TEST_DATA_CACHE``,
default ``~/.cache/zarr-vectors-test-data``).  A test that needs a file that is neither
committed nor obtainable (no network, no cache) is skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nibabel
import pytest

from zarr_vectors.formats.registry import convert, export

DATA = Path(__file__).resolve().parents[1] / "data"
CACHE = Path(
    os.environ.get("ZV_TEST_DATA_CACHE", Path.home() / ".cache" / "zarr-vectors-test-data")
)


@dataclass(frozen=True)
class Distribution:
    """A pinned distribution whose files the tests read, and where they sit inside it."""

    name: str
    version: str
    inner: str
    wheel: bool = False

    @property
    def folder(self) -> Path:
        return CACHE / f"{self.name}-{self.version}"


DISTRIBUTIONS = {
    "laspy": Distribution("laspy", "2.7.0", "laspy-2.7.0/tests/data"),
    "meshio": Distribution("meshio", "5.3.5", "meshio-5.3.5/tests/meshes"),
    "pyvista": Distribution("pyvista", "0.49.1", "pyvista/examples", wheel=True),
    "navis": Distribution("navis", "1.12.0", "navis/data", wheel=True),
    # dipy's wheels are per platform; pip picks this machine's (the data files are the same)
    "dipy": Distribution("dipy", "1.12.1", "dipy/data/files", wheel=True),
}


def _download(dist: Distribution) -> Path:
    """Fetch and unpack ``dist`` into the cache (once); raise OSError when impossible."""
    target = dist.folder / dist.inner
    if target.is_dir():
        return target
    kind = ["--only-binary", ":all:"] if dist.wheel else ["--no-binary", ":all:"]
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", *kind, "-d", tmp, "-q"]
        done = subprocess.run(
            [*cmd, f"{dist.name}=={dist.version}"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        files = list(Path(tmp).iterdir())
        if done.returncode != 0 or len(files) != 1:
            raise OSError(f"pip download {dist.name}=={dist.version} failed: {done.stderr[-300:]}")
        # unpack beside the cache entry and rename it into place: pytest-xdist workers may
        # fetch the same distribution at once, and none may see a half-unpacked folder
        CACHE.mkdir(parents=True, exist_ok=True)
        unpacked = Path(tempfile.mkdtemp(dir=CACHE, prefix=f".{dist.name}-"))
        if files[0].suffix == ".whl":
            with zipfile.ZipFile(files[0]) as zf:
                zf.extractall(unpacked)
        else:
            with tarfile.open(files[0]) as tf:
                tf.extractall(unpacked, filter="data")
        try:
            unpacked.rename(dist.folder)
        except OSError:  # another worker got there first: its copy is the same
            shutil.rmtree(unpacked, ignore_errors=True)
    if not target.is_dir():
        raise OSError(f"{dist.name} {dist.version} has no {dist.inner}")
    return target


@dataclass
class RealFiles:
    """Finds real test files: committed copy first, then the distribution that ships it."""

    failures: dict[str, str] = field(default_factory=dict)

    def path(self, kind: str, name: str) -> Path:
        """Path of ``name`` shipped by ``kind`` (``laspy``, ``meshio``, ``pyvista``, ``navis``,
        ``dipy``, ``nibabel``).

        Skips the test when the file is neither committed nor obtainable.
        """
        committed = DATA / kind / name
        if committed.is_file():
            return committed
        if kind == "nibabel":
            found = Path(nibabel.__file__).parent / "tests" / "data" / name
            if found.is_file():
                return found
            pytest.skip(f"nibabel's installed tests/data has no {name}")
        dist = DISTRIBUTIONS[kind]
        if dist.name in self.failures:
            pytest.skip(self.failures[dist.name])
        try:
            folder = _download(dist)
        except (OSError, subprocess.SubprocessError) as exc:
            self.failures[dist.name] = f"{name}: not committed and not downloadable ({exc})"
            pytest.skip(self.failures[dist.name])
        found = folder / name
        if not found.is_file():
            pytest.skip(f"{dist.name} {dist.version} ships no {name}")
        return found


@pytest.fixture(scope="session")
def real_files() -> RealFiles:
    """Session-wide finder of real files (downloads are cached across sessions)."""
    return RealFiles()


@pytest.fixture
def round_trip(tmp_path: Path) -> Callable[..., tuple[Path, object]]:
    """``round_trip(src, suffix, **convert_kw)``: convert to a store and export back."""

    def run(src: Path, suffix: str | None = None, **kw: object) -> tuple[Path, object]:
        store = tmp_path / "s.zarrvectors"
        report = convert(src, str(store), overwrite=True, **kw)
        out = tmp_path / f"out{suffix or src.suffix}"
        export(str(store), out)
        return out, report

    return run
