"""A multipart/form-data body streamed from files, with its length known in advance, so a
multi-gigabyte perf.data is sent without being read into memory."""
from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from typing import Callable, Iterator

CHUNK = 1 << 20


@dataclass
class FilePart:
    field: str
    path: str

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


class MultipartBody:
    def __init__(self, fields: dict[str, str] | list[tuple[str, str]],
                 files: list[FilePart]):
        """`fields`: a dict, or (name, value) pairs where a name repeats."""
        self.boundary = "perfweb-" + secrets.token_hex(16)
        self.fields = list(fields.items()) if isinstance(fields, dict) else list(fields)
        self.files = files

    @property
    def content_type(self) -> str:
        return f"multipart/form-data; boundary={self.boundary}"

    def _field_head(self, name: str) -> bytes:
        return (f"--{self.boundary}\r\nContent-Disposition: form-data; "
                f"name=\"{_quote(name)}\"\r\n\r\n").encode()

    def _file_head(self, part: FilePart) -> bytes:
        return (f"--{self.boundary}\r\nContent-Disposition: form-data; "
                f"name=\"{_quote(part.field)}\"; filename=\"{_quote(part.name)}\"\r\n"
                f"Content-Type: application/octet-stream\r\n\r\n").encode()

    def _tail(self) -> bytes:
        return f"--{self.boundary}--\r\n".encode()

    def __len__(self) -> int:
        n = sum(len(self._field_head(k)) + len(v.encode()) + 2 for k, v in self.fields)
        n += sum(len(self._file_head(p)) + os.path.getsize(p.path) + 2 for p in self.files)
        return n + len(self._tail())

    def _parts(self) -> Iterator[bytes]:
        for k, v in self.fields:
            yield self._field_head(k) + v.encode() + b"\r\n"
        for p in self.files:
            yield self._file_head(p)
            with open(p.path, "rb") as f:
                while block := f.read(CHUNK):
                    yield block
            yield b"\r\n"
        yield self._tail()

    def chunks(self, progress: Callable[[int], None] = lambda n: None) -> Iterator[bytes]:
        """The body; `progress` is told each chunk's size once it is sent."""
        for chunk in self._parts():
            yield chunk
            progress(len(chunk))


def _quote(s: str) -> str:
    # RFC 7578: names are sent as they are, with quotes and line breaks escaped
    return s.replace("\\", "\\\\").replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")
