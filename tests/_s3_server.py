"""A real S3 protocol server (moto) on 127.0.0.1 for the tests that read and write S3 stores."""

from __future__ import annotations

import contextlib
import functools
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import boto3
from moto.s3.responses import S3Response
from moto.server import ThreadedMotoServer

__all__ = ["atomic_conditional_writes", "moto_s3"]

_KEY_WRITES = threading.Lock()


def _serialised(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        with _KEY_WRITES:
            return method(self, *args, **kwargs)

    call.zv_serialised = True  # type: ignore[attr-defined]
    return call


def atomic_conditional_writes() -> None:
    """Make the in-process moto server decide conditional PUTs and DELETEs atomically.

    S3 evaluates ``If-None-Match: *`` and ``If-Match`` atomically with the write.  moto's
    threaded server looks the key up and then writes it, so two racing requests can both pass
    the check.  Serialising its object PUT and DELETE handlers gives the tests S3's semantics.
    """
    for name in ("put_object", "delete_object"):
        method = getattr(S3Response, name)
        if not getattr(method, "zv_serialised", False):
            setattr(S3Response, name, _serialised(method))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def moto_s3(bucket: str) -> Iterator[dict[str, Any]]:
    """Run a moto S3 server holding the empty ``bucket``; yield the s3fs storage options.

    The server listens on a free port of 127.0.0.1 and stops on leaving the block.  Listings
    are not cached, so every read sees what the test wrote last.
    """
    atomic_conditional_writes()
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="test",
            aws_secret_access_key="test",
            region_name="us-east-1",
        ).create_bucket(Bucket=bucket)
        yield {
            "endpoint_url": endpoint,
            "key": "test",
            "secret": "test",
            "client_kwargs": {"region_name": "us-east-1"},
            "use_listings_cache": False,
        }
    finally:
        server.stop()
