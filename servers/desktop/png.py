"""PNG screenshots that re-compress only the bands of the screen that changed since the last frame.

A screen between two actions mostly stays as it was: typing a word changes a line, the status bar
and the title. The frame is cut into bands of :data:`BAND_ROWS` rows; each band is compressed on its
own (a fresh raw-deflate stream ended by a full flush, so it refers to nothing before it) and kept,
keyed by the band's pixels. The PNG's one IDAT chunk is the zlib header, the bands' deflate data in
order, an empty final block and the Adler-32 of the whole, combined from the bands' own checksums.

The bytes depend on the pixels only, never on which frames came before: a band compressed now or
taken from the cache is the same bytes, so the same screen gives the same file (forks, replays and
the determinism audit compare them). The picture is the same 8-bit RGB image Pillow would write;
rows use PNG filter 0 (none) and zlib level 1.
"""

from __future__ import annotations

import struct
import zlib

from PIL import Image as Picture

__all__ = ["BAND_ROWS", "BandEncoder", "adler32_combine"]

BAND_ROWS = 16
_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_ZLIB_HEADER = b"\x78\x01"  # deflate, 32 KiB window, level "fastest"
_FINAL_BLOCK = b"\x03\x00"  # an empty final block with fixed codes
_ADLER_BASE = 65521


def adler32_combine(first: int, second: int, second_length: int) -> int:
    """The Adler-32 of A + B from A's checksum, B's checksum and B's length (zlib's adler32_combine)."""
    rem = second_length % _ADLER_BASE
    sum1 = first & 0xFFFF
    sum2 = (rem * sum1) % _ADLER_BASE
    sum1 += (second & 0xFFFF) + _ADLER_BASE - 1
    sum2 += ((first >> 16) & 0xFFFF) + ((second >> 16) & 0xFFFF) + _ADLER_BASE - rem
    if sum1 >= _ADLER_BASE:
        sum1 -= _ADLER_BASE
    if sum1 >= _ADLER_BASE:
        sum1 -= _ADLER_BASE
    if sum2 >= _ADLER_BASE << 1:
        sum2 -= _ADLER_BASE << 1
    if sum2 >= _ADLER_BASE:
        sum2 -= _ADLER_BASE
    return sum1 | (sum2 << 16)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


class BandEncoder:
    """Encodes frames of one screen, remembering the last frame's compressed bands."""

    def __init__(self) -> None:
        self._size: tuple[int, int] | None = None
        self._bands: list[tuple[bytes, bytes, int, int]] = []  # (raw BGRX, deflate data, adler32, length)

    def encode(self, bgrx: bytes, width: int, height: int) -> bytes:
        """The PNG of a ``width`` x ``height`` frame given as BGRX rows (X server order, 4 bytes a pixel)."""
        if self._size != (width, height):
            self._size, self._bands = (width, height), []
        stride = width * 4
        step = stride * BAND_ROWS
        bands: list[tuple[bytes, bytes, int, int]] = []
        for index, start in enumerate(range(0, stride * height, step)):
            raw = bgrx[start : start + step]
            if index < len(self._bands) and self._bands[index][0] == raw:
                bands.append(self._bands[index])
                continue
            rows = len(raw) // stride
            rgb = Picture.frombuffer("RGB", (width, rows), raw, "raw", "BGRX", stride, 1).tobytes()
            line = width * 3
            filtered = b"".join(b"\x00" + rgb[r * line : (r + 1) * line] for r in range(rows))
            compressor = zlib.compressobj(1, zlib.DEFLATED, -15)
            data = compressor.compress(filtered) + compressor.flush(zlib.Z_FULL_FLUSH)
            bands.append((raw, data, zlib.adler32(filtered), len(filtered)))
        self._bands = bands
        checksum = 1
        for _, _, adler, length in bands:
            checksum = adler32_combine(checksum, adler, length)
        idat = b"".join([_ZLIB_HEADER, *(data for _, data, _, _ in bands), _FINAL_BLOCK, struct.pack(">I", checksum)])
        header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
        return b"".join([_SIGNATURE, _chunk(b"IHDR", header), _chunk(b"IDAT", idat), _chunk(b"IEND", b"")])
