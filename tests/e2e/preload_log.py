"""A strict reader of the preload library's log (reprun.files/3, appended or mapped: preload/reprun_preload.c,
preload/log_map.h), for the
e2e tests test_preload_*.sh: every line must parse, or the test fails naming the line.
Not reprun's reader (that is C++); this one only checks the format and answers the tests' questions.
"""
import os
import re
import sys
from dataclasses import dataclass

CREATED = 0x40000000
INT = re.compile(rb"-?[0-9]+")
UINT = re.compile(rb"[0-9]+")
DEVINO = re.compile(rb"([0-9]+):([0-9]+):([0-9]+)")


@dataclass
class Record:
    line: int
    pid: int
    ev: str       # S O D X A L
    a: object     # int (S: ppid, O: flags, D: 0, A: the argument's index, L: 0) or str (X: ok | cleared | static)
    b: int
    size: int
    mtime_ns: int
    dev: int
    ino: int
    ctime_ns: int
    path: bytes   # unescaped
    cut: bool     # the path ended with the mark "\c"
    where: bytes  # O of a Python process: the program's b"file:line" or b"import"; L: the link's target; else b""


def unescape(raw, where):
    out = bytearray()
    i = 0
    cut = False
    while i < len(raw):
        c = raw[i]
        if c == 0x5C:  # backslash
            nxt = raw[i + 1:i + 2]
            if nxt == b"\\":
                out += b"\\"
                i += 2
            elif nxt == b"t":
                out += b"\t"
                i += 2
            elif nxt == b"n":
                out += b"\n"
                i += 2
            elif nxt == b"x" and re.fullmatch(rb"[0-9a-f]{2}", raw[i + 2:i + 4]):
                out.append(int(raw[i + 2:i + 4], 16))
                i += 4
            elif nxt == b"c" and i + 2 == len(raw):
                cut = True
                i += 2
            else:
                raise ValueError(f"{where}: bad escape {raw[i:i + 4]!r}")
        elif c < 0x20 or c == 0x7F:
            raise ValueError(f"{where}: unescaped control byte {c:#x}")
        else:
            out.append(c)
            i += 1
    return bytes(out), cut


MAGIC = b"reprun.files/3 mapped\n"  # the mapped form (preload/log_map.h): a header page, then the records
HEADER = 4096


def header(data):
    """The mapped form's header fields: (reserved, lost, unmapped, size); None for an appended log."""
    if not data.startswith(MAGIC):
        return None
    return tuple(int.from_bytes(data[at:at + 8], sys.byteorder) for at in (64, 72, 80)) + (len(data),)


def records_text(path, data):
    """The records' bytes: an appended log as it is; of the mapped form, the bytes reserved after its
    header, which must all have been filled (no record lost, no place left empty by a killed
    process), with zeros after them to the end of the file."""
    h = header(data)
    if h is None:
        return data
    reserved, lost, unmapped, size = h
    if lost or unmapped:
        raise ValueError(f"{path}: {lost} records lost, unmapped flag {unmapped}")
    body, rest = data[HEADER:HEADER + reserved], data[HEADER + reserved:]
    if size < HEADER + reserved or size % (1 << 20) or rest.strip(b"\0"):
        raise ValueError(f"{path}: {reserved} bytes reserved in {size} (whole segments of a MiB); after them {rest[:100]!r}")
    if b"\0" in body:
        raise ValueError(f"{path}: a place reserved and not filled at {HEADER + body.index(0)}")
    return body


def parse(path):
    with open(path, "rb") as f:
        data = records_text(path, f.read())
    if data and not data.endswith(b"\n"):
        raise ValueError(f"{path}: the last line has no newline: {data[-200:]!r}")
    records = []
    for n, line in enumerate(data.split(b"\n")[:-1], 1):
        where = f"{path}:{n}"
        f = line.split(b"\t")
        if len(f) != 9:
            raise ValueError(f"{where}: {len(f)} fields, not 9: {line[:300]!r}")
        pid, ev, a, b, size, mtime, devino, line_of, p = f
        if not UINT.fullmatch(pid) or int(pid) <= 0:
            raise ValueError(f"{where}: pid {pid!r}")
        if ev not in (b"S", b"O", b"D", b"X", b"A", b"L"):
            raise ValueError(f"{where}: event {ev!r}")
        if ev == b"X":
            if a not in (b"ok", b"cleared", b"static"):
                raise ValueError(f"{where}: X reason {a!r}")
            a = a.decode()
        elif not INT.fullmatch(a):
            raise ValueError(f"{where}: a {a!r}")
        else:
            a = int(a)
        for name, v, pat in (("b", b, INT), ("size", size, UINT), ("mtime_ns", mtime, INT)):
            if not pat.fullmatch(v):
                raise ValueError(f"{where}: {name} {v!r}")
        m = DEVINO.fullmatch(devino)
        if not m:
            raise ValueError(f"{where}: dev:ino:ctime_ns {devino!r}")
        if ev in (b"S", b"X", b"A", b"L") and int(b) != 0 or ev == b"D" and int(b) > 0 or ev == b"A" and int(a) < 1:
            raise ValueError(f"{where}: b {b!r} for {ev!r}")
        if ev == b"L" and (int(a) != 0 or line_of == b"-" or (size, mtime, devino) != (b"0", b"0", b"0:0:0")):
            raise ValueError(f"{where}: an L record without its target, or with a stat: {line!r}")
        if line_of != b"-" and ev not in (b"O", b"L"):
            raise ValueError(f"{where}: a program line {line_of!r} on {ev!r}")
        line_bytes, line_cut = unescape(line_of, where) if line_of != b"-" else (b"", False)
        if ev == b"O" and (line_cut or (line_bytes != b"import" and line_bytes and not re.fullmatch(rb".+:[0-9]+", line_bytes))):
            raise ValueError(f"{where}: program line {line_of!r}")
        path_bytes, cut = unescape(p, where)
        records.append(Record(n, int(pid), ev.decode(), a, int(b), int(size), int(mtime),
                              int(m.group(1)), int(m.group(2)), int(m.group(3)), path_bytes, cut, line_bytes))
    return records


def same_file(r, path):
    st = os.stat(path)
    return (r.dev, r.ino, r.size, r.mtime_ns, r.ctime_ns) == (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                                                           st.st_ctime_ns)


def image_of(records, r):
    """The path of the program image that wrote r: its pid's last S before it (None if none)."""
    img = None
    for s in records:
        if s.line >= r.line:
            break
        if s.pid == r.pid and s.ev == "S":
            img = s.path
    return img


def dump(records, limit=80):
    return "\n".join(f"{r.line}: {r.pid} {r.ev} {r.a} {r.b} {r.size} {r.dev}:{r.ino} {r.path!r}"
                     for r in records[:limit])


def check(cond, message, records=()):
    if not cond:
        print(f"FAIL: {message}", file=sys.stderr)
        if records:
            print(dump(records), file=sys.stderr)
        sys.exit(1)
