"""A perf map of the kernels XLA generated in this process, so that
`perf report` names them (`fusion.12`, `wrapped_reduce-window.3`) instead of
showing anonymous addresses.

XLA's CPU backend registers each JIT-loaded object file with LLVM's GDB JIT
interface: a linked list headed by the plugin's `__jit_debug_descriptor`,
each entry an in-memory ELF object whose section headers hold the addresses
the code was loaded at. We walk that list and write every function symbol to
/tmp/perf-<pid>.map, the file perf reads for JIT code.
"""
import ctypes
import os
import struct

from . import _C

_SHT_SYMTAB, _STT_FUNC = 2, 2


class _Entry(ctypes.Structure):
    pass


_Entry._fields_ = [("next", ctypes.POINTER(_Entry)), ("prev", ctypes.POINTER(_Entry)),
                   ("symfile", ctypes.c_void_p), ("size", ctypes.c_uint64)]


class _Descriptor(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("action", ctypes.c_uint32),
                ("relevant", ctypes.POINTER(_Entry)), ("first", ctypes.POINTER(_Entry))]


def _sections(elf):
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    entsize, count = struct.unpack_from("<HH", elf, 0x3A)
    return [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * entsize) for i in range(count)]


def _symbols(elf):
    """(name, type, section index, value, size) of every named symbol of an
    ELF64 object's symbol tables."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        return
    secs = _sections(elf)
    for sec in secs:
        if sec[1] != _SHT_SYMTAB:
            continue
        strtab = secs[sec[6]][4]
        for j in range(sec[5] // 24):
            name, info, _other, shndx, value, size = struct.unpack_from("<IBBHQQ", elf, sec[4] + j * 24)
            end = elf.index(b"\0", strtab + name)
            if end > strtab + name:  # unnamed symbols say nothing
                yield elf[strtab + name:end], info & 0xF, shndx, value, size


def _functions(elf):
    """(name, address, size) of the functions of a loaded object (its section
    headers hold the addresses its sections were loaded at)."""
    secs = _sections(elf) if elf[:4] == b"\x7fELF" else []
    return [(name.decode(errors="replace"), secs[shndx][3] + value, size)
            for name, kind, shndx, value, size in _symbols(elf)
            if kind == _STT_FUNC and size and shndx < len(secs)]


def _symbol_offset(path, wanted):
    with open(path, "rb") as f:
        elf = f.read()
    return next((value for name, _, _, value, _ in _symbols(elf) if name == wanted), None)


def _load_base(path):
    real = os.path.realpath(path)
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and fields[2] == "00000000" and os.path.realpath(fields[5]) == real:
                return int(fields[0].split("-")[0], 16)
    return None


def write_perf_map(path=None):
    """Writes the perf map; returns (path, number of kernels named)."""
    plugin = _C._plugin_path()
    offset = _symbol_offset(plugin, b"__jit_debug_descriptor")
    base = _load_base(plugin)
    if offset is None or base is None:
        raise RuntimeError(f"the PJRT plugin {plugin} keeps no GDB JIT registry "
                           "(no __jit_debug_descriptor symbol): its kernels cannot be named")
    desc = _Descriptor.from_address(base + offset)
    rows = []
    entry = desc.first
    while entry:
        obj = ctypes.string_at(entry.contents.symfile, entry.contents.size)
        rows += _functions(obj)
        entry = entry.contents.next
    path = path or f"/tmp/perf-{os.getpid()}.map"
    with open(path, "w") as f:
        for name, addr, size in sorted(rows, key=lambda r: r[1]):
            f.write(f"{addr:x} {size:x} {name}\n")
    return path, len(rows)
