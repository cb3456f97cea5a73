#!/usr/bin/env bash
# Create an isolated virtual environment holding the *upstream* PyPI package
# ``zarr-vectors==0.2.0`` so that benchmarks/upstream/runner.py can compare it
# against our own implementation without ever shadowing our ``zarr_vectors``.
#
# Usage:  bash benchmarks/upstream/setup_venv.sh
# Env:    ZV_UPSTREAM_VENV   target directory (default /tmp/zv-upstream-venv)
#         ZV_UPSTREAM_VERSION  upstream version (default 0.2.0)
#         PYTHON             interpreter used to create the venv (default python3)
set -euo pipefail

VENV="${ZV_UPSTREAM_VENV:-/tmp/zv-upstream-venv}"
VERSION="${ZV_UPSTREAM_VERSION:-0.2.0}"
PY="${PYTHON:-python3}"

if [ ! -x "${VENV}/bin/python" ]; then
    echo "creating venv at ${VENV}" >&2
    "${PY}" -m venv "${VENV}"
fi

installed="$("${VENV}/bin/python" - <<'PY' 2>/dev/null || true
from importlib.metadata import version, PackageNotFoundError
try:
    print(version("zarr-vectors"))
except PackageNotFoundError:
    print("")
PY
)"

if [ "${installed}" = "${VERSION}" ]; then
    echo "zarr-vectors ${VERSION} already installed in ${VENV}" >&2
else
    echo "installing zarr-vectors==${VERSION} into ${VENV}" >&2
    "${VENV}/bin/python" -m pip install --quiet --disable-pip-version-check \
        "zarr-vectors==${VERSION}"
fi

"${VENV}/bin/python" -c "import zarr_vectors, sys; print(zarr_vectors.__file__, file=sys.stderr)"
echo "${VENV}/bin/python"
