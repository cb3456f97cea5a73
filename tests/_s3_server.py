"""A real S3 protocol server (moto) on 127.0.0.1 for the tests that read and write S3 stores."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

__all__ = ["moto_s3"]


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
