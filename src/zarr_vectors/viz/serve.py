"""A small static file server with CORS, for showing exports in a Neuroglancer client.

Neuroglancer runs in the browser and fetches ``precomputed://http://...`` sources with
cross-origin requests, so every response carries ``Access-Control-Allow-Origin: *`` (and the
private-network header Chromium asks a public page for before it may reach ``127.0.0.1``).
The server binds to the loopback interface by default and runs on a daemon thread.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.parse
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self

__all__ = ["DEFAULT_CLIENT", "StaticServer", "neuroglancer_url", "serve"]

DEFAULT_CLIENT = "https://neuroglancer-demo.appspot.com/"
"""Public Neuroglancer client used when no other client URL is given."""


class _CORSHandler(SimpleHTTPRequestHandler):
    """Serve files from a directory with CORS headers and without request logging."""

    def end_headers(self) -> None:
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Allow-Headers", "*")
        self.send_header("Access-Control-Allow-Private-Network", "true")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def do_OPTIONS(self) -> None:
        """Answer CORS pre-flight requests."""
        self.send_response(204)
        self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: a viewer makes thousands of requests."""


class StaticServer:
    """A running HTTP server sharing one directory (a context manager).

    Examples
    --------
    >>> import tempfile, urllib.request
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (Path(d) / "info").write_text("{}")
    ...     with serve(d) as server:
    ...         with urllib.request.urlopen(server.url + "/info") as response:
    ...             response.headers["Access-Control-Allow-Origin"], response.read()
    ('*', b'{}')
    """

    def __init__(self, directory: str | os.PathLike[str], *, host: str, port: int) -> None:
        self.directory = Path(directory)
        handler = partial(_CORSHandler, directory=str(self.directory))
        self._httpd = ThreadingHTTPServer((host, port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def host(self) -> str:
        """Address the server listens on."""
        return str(self._httpd.server_address[0])

    @property
    def port(self) -> int:
        """Port the server listens on (the one picked when 0 was asked for)."""
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Base URL of the served directory, without a trailing slash."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> Self:
        """Start serving on a background thread."""
        self._thread.start()
        return self

    def wait(self, timeout: float | None = None) -> None:
        """Block until the server stops, or ``timeout`` seconds pass."""
        self._thread.join(timeout)

    def close(self) -> None:
        """Stop serving and release the port."""
        if self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def serve(
    directory: str | os.PathLike[str], *, host: str = "127.0.0.1", port: int = 0
) -> StaticServer:
    """Serve ``directory`` over HTTP with CORS on a background thread.

    Parameters
    ----------
    directory
        Folder to share (e.g. the output of :func:`~zarr_vectors.viz.export_neuroglancer`).
    host
        Interface to bind; the loopback address by default.
    port
        Port to listen on; 0 picks a free one.

    Returns
    -------
    StaticServer
        The running server; close it (or use it as a context manager) to stop.

    Raises
    ------
    OSError
        The port is taken.
    """
    return StaticServer(directory, host=host, port=port).start()


def neuroglancer_url(state: dict[str, Any], client: str = DEFAULT_CLIENT) -> str:
    """Return a Neuroglancer client URL that opens ``state`` (``CLIENT#!{json}``).

    Examples
    --------
    >>> neuroglancer_url({"layout": "3d"}, "http://127.0.0.1:9000/ng/")
    'http://127.0.0.1:9000/ng/#!%7B%22layout%22:%223d%22%7D'
    """
    text = json.dumps(state, separators=(",", ":"), allow_nan=False)
    return f"{client}#!{urllib.parse.quote(text, safe=':/,[]=')}"
