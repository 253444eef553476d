"""Vectorised random strings for the Nexmark generator, built straight into Arrow string arrays.

Each function draws every character of a batch at once with numpy and hands the bytes to Arrow
as one buffer, so no Python string is made per row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

MIN_STRING_LENGTH = 3       # StringsGenerator.MIN_STRING_LENGTH
SPECIAL_CHAR_ODDS = 13      # one character in 13 is the special character (a space by default)


def _from_bytes(data: np.ndarray, lengths: np.ndarray) -> pa.StringArray:
    """The ASCII ``data`` cut into consecutive strings of ``lengths``."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)     # a chunk holds far less than 2 GiB of text
    np.cumsum(lengths, out=offsets[1:])
    return pa.StringArray.from_buffers(len(lengths), pa.py_buffer(offsets), pa.py_buffer(data))


def exact_strings(rng: np.random.Generator, lengths: np.ndarray) -> pa.StringArray:
    """Strings of exactly ``lengths`` lower-case letters (StringsGenerator.nextExactString)."""
    data = rng.integers(ord("a"), ord("z") + 1, size=int(lengths.sum()), dtype=np.uint8)
    return _from_bytes(data, lengths)


def random_strings(rng: np.random.Generator, count: int, max_length: int, special: str = " ") -> pa.StringArray:
    """``count`` strings as StringsGenerator.nextString(maxLength, special) makes them: a length of
    3 to ``max_length - 1``, each character ``special`` with odds 1 in 13 and otherwise a letter,
    then leading and trailing whitespace trimmed."""
    lengths = MIN_STRING_LENGTH + rng.integers(0, max_length - MIN_STRING_LENGTH, size=count)
    total = int(lengths.sum())
    letters = rng.integers(ord("a"), ord("z") + 1, size=total, dtype=np.uint8)
    is_special = rng.integers(0, SPECIAL_CHAR_ODDS, size=total) == 0
    strings = _from_bytes(np.where(is_special, np.uint8(ord(special)), letters), lengths)
    return pc.utf8_trim_whitespace(strings) if special.isspace() else strings


def extra_lengths(rng: np.random.Generator, current_sizes: np.ndarray, average_size: int) -> np.ndarray:
    """Lengths of the ``extra`` padding (StringsGenerator.nextExtra): a row already ``current_size``
    bytes long gets ``average_size - current_size`` bytes on average, give or take 20%, and none
    when it is already longer than ``average_size``."""
    wanted = np.maximum(average_size - current_sizes, 0)
    delta = np.floor(wanted * 0.2 + 0.5).astype(np.int64)     # Java's Math.round
    spread = rng.integers(0, np.maximum(2 * delta, 1))
    lengths = wanted - delta + np.where(delta == 0, 0, spread)
    return np.where(current_sizes > average_size, 0, lengths)


def fixed_width_digits(rng: np.random.Generator, count: int, groups: int, width: int) -> pa.StringArray:
    """``count`` strings of ``groups`` groups of ``width`` random decimal digits, separated by spaces
    (a credit card number: 4 groups of 4, each group uniform over 0000 to 9999)."""
    row_length = groups * (width + 1) - 1
    chars = rng.integers(ord("0"), ord("9") + 1, size=(count, row_length), dtype=np.uint8)
    chars[:, width::width + 1] = ord(" ")
    return _from_bytes(chars.ravel(), np.full(count, row_length, dtype=np.int64))


def int32_bit_reversed_abs(values: np.ndarray) -> np.ndarray:
    """``Math.abs(Integer.reverse(v))`` for each value, with Java's int overflow (the abs of
    Integer.MIN_VALUE stays negative)."""
    bits: np.ndarray = values.astype(np.uint32)
    for shift, mask in ((1, 0x55555555), (2, 0x33333333), (4, 0x0F0F0F0F), (8, 0x00FF00FF)):
        bits = ((bits >> shift) & np.uint32(mask)) | ((bits & np.uint32(mask)) << shift)
    bits = (bits >> 16) | (bits << 16)
    return np.abs(bits.view(np.int32))
