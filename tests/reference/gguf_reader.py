"""A GGUF v3 reader: header, metadata, tensor infos and tensor bytes.

Layout (little-endian), as the GGUF specification defines it:
  magic "GGUF", u32 version, u64 tensor_count, u64 metadata_kv_count,
  metadata: (string key, u32 value_type, value) * metadata_kv_count,
  tensor infos: (string name, u32 n_dims, u64 dims[n_dims], u32 ggml_type,
                 u64 offset) * tensor_count,
  padding to `general.alignment` (default 32), then the tensor data; each
  tensor's offset is relative to the start of the data.
A string is u64 length + UTF-8 bytes; an array is u32 element type + u64
count + the elements. Dims are fastest-varying first: a matrix of n_out rows
of n_in elements has dims [n_in, n_out].
"""
import struct
from dataclasses import dataclass

import numpy as np

from ggml_types import row_bytes

MAGIC = b"GGUF"

# Metadata value types and the struct format of the fixed-size ones.
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
SCALAR_FORMATS = {
    UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i",
    FLOAT32: "<f", BOOL: "<?", UINT64: "<Q", INT64: "<q", FLOAT64: "<d",
}


class GgufError(Exception):
    pass


@dataclass
class TensorInfo:
    name: str
    dims: tuple        # fastest-varying first, as stored
    ggml_type: int
    offset: int        # absolute offset of the first byte in the file
    n_bytes: int


class _Cursor:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, n):
        if self.pos + n > len(self.data):
            raise GgufError(f"truncated file: wanted {n} bytes at offset {self.pos}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def scalar(self, value_type):
        fmt = SCALAR_FORMATS[value_type]
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self):
        return bytes(self.take(self.scalar(UINT64))).decode("utf-8")

    def value(self, value_type):
        if value_type == STRING:
            return self.string()
        if value_type == ARRAY:
            elem_type = self.scalar(UINT32)
            count = self.scalar(UINT64)
            if elem_type in SCALAR_FORMATS:  # fixed size: read all at once (a vocabulary's scores, ...)
                fmt = SCALAR_FORMATS[elem_type]
                return np.frombuffer(self.take(count * struct.calcsize(fmt)), dtype=fmt).tolist()
            return [self.value(elem_type) for _ in range(count)]
        if value_type not in SCALAR_FORMATS:
            raise GgufError(f"unknown metadata value type {value_type} at offset {self.pos}")
        return self.scalar(value_type)


class GgufFile:
    """Opens a GGUF file. `metadata` maps keys to Python values (arrays are
    lists); `tensors` maps names to TensorInfo; tensor_bytes() gives a
    tensor's raw bytes as a uint8 array backed by the file mapping."""

    def __init__(self, path):
        self.path = path
        self._data = np.memmap(path, dtype=np.uint8, mode="r")
        cursor = _Cursor(self._data)
        if bytes(cursor.take(4)) != MAGIC:
            raise GgufError(f"{path}: not a GGUF file (bad magic)")
        self.version = cursor.scalar(UINT32)
        if self.version != 3:
            raise GgufError(f"{path}: GGUF version {self.version}; this reader knows version 3")
        n_tensors = cursor.scalar(UINT64)
        n_kv = cursor.scalar(UINT64)
        self.metadata = {}
        metadata_start = cursor.pos
        for _ in range(n_kv):
            key = cursor.string()
            self.metadata[key] = cursor.value(cursor.scalar(UINT32))
        self.metadata_bytes = bytes(self._data[metadata_start:cursor.pos])  # as stored, for copying
        infos = []
        for _ in range(n_tensors):
            name = cursor.string()
            n_dims = cursor.scalar(UINT32)
            dims = tuple(cursor.scalar(UINT64) for _ in range(n_dims))
            infos.append((name, dims, cursor.scalar(UINT32), cursor.scalar(UINT64)))
        alignment = self.metadata.get("general.alignment", 32)
        data_start = (cursor.pos + alignment - 1) // alignment * alignment
        self.tensors = {}
        for name, dims, ggml_type, offset in infos:
            n_rows = int(np.prod(dims[1:], dtype=np.int64)) if len(dims) > 1 else 1
            n_bytes = n_rows * row_bytes(ggml_type, dims[0])
            start = data_start + offset
            if offset % alignment != 0 or start + n_bytes > len(self._data):
                raise GgufError(f"{path}: tensor {name} at data offset {offset} ({n_bytes} bytes) is misaligned "
                                f"or past the end of the file")
            if name in self.tensors:
                raise GgufError(f"{path}: tensor {name} appears twice")
            self.tensors[name] = TensorInfo(name, dims, ggml_type, start, n_bytes)

    def tensor_bytes(self, name):
        info = self.tensors[name]
        return self._data[info.offset:info.offset + info.n_bytes]
