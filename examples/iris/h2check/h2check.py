#!/usr/bin/env python3
"""h2check: an HTTP/2 conformance and attack test suite (a stand-in for h2spec).

Written from RFC 9113 (HTTP/2) and RFC 7541 (HPACK). Every case opens its own
connection, sends raw frames (built with hyperframe, or by hand where the frame
is deliberately malformed) and judges the server's reaction:

* connection error: PASS on GOAWAY with an expected code, or on connection close;
* stream error: PASS on RST_STREAM or GOAWAY with an expected code, or on close;
* a GOAWAY/RST_STREAM with another code passes only if the connection then closes (as in
  h2spec; the PASS line says "lenient"), and fails with --strict;
* a normal answer to a malformed request, or a timeout: FAIL.

See README.md for the case list, the options and the attack pass rules.

Usage: python3 h2check.py [--h2c HOST:PORT] [--h2 HOST:PORT] [--pid PID] [--only REGEX]
                          [--attacks|--no-attacks] [--host NAME] [--big PATH] ...
"""

import argparse
import re
import socket
import ssl
import struct
import sys
import threading
import time

try:
    import hpack
    from hyperframe import frame as hf
except ImportError as e:  # pragma: no cover
    sys.stderr.write(f"h2check: missing dependency ({e}); pip install -r requirements.txt\n")
    sys.exit(2)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# Error codes (RFC 9113 section 7).
NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR = 0x0, 0x1, 0x2, 0x3
SETTINGS_TIMEOUT, STREAM_CLOSED, FRAME_SIZE_ERROR, REFUSED_STREAM = 0x4, 0x5, 0x6, 0x7
CANCEL, COMPRESSION_ERROR, CONNECT_ERROR, ENHANCE_YOUR_CALM = 0x8, 0x9, 0xA, 0xB
ERR_NAMES = {
    0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR",
    4: "SETTINGS_TIMEOUT", 5: "STREAM_CLOSED", 6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM",
    8: "CANCEL", 9: "COMPRESSION_ERROR", 10: "CONNECT_ERROR", 11: "ENHANCE_YOUR_CALM",
    12: "INADEQUATE_SECURITY", 13: "HTTP_1_1_REQUIRED",
}

# Frame types.
T_DATA, T_HEADERS, T_PRIORITY, T_RST, T_SETTINGS = 0x0, 0x1, 0x2, 0x3, 0x4
T_PUSH, T_PING, T_GOAWAY, T_WINDOW, T_CONT = 0x5, 0x6, 0x7, 0x8, 0x9
F_END_STREAM, F_ACK, F_END_HEADERS, F_PADDED, F_PRIORITY = 0x1, 0x1, 0x4, 0x8, 0x20

# Settings.
S_HEADER_TABLE_SIZE, S_ENABLE_PUSH, S_MAX_CONCURRENT = 0x1, 0x2, 0x3
S_INITIAL_WINDOW, S_MAX_FRAME_SIZE, S_MAX_HEADER_LIST = 0x4, 0x5, 0x6


def ename(code):
    return ERR_NAMES.get(code, hex(code))


class CaseFail(Exception):
    pass


class CaseSkip(Exception):
    pass


# ----------------------------------------------------------------------------
# Encoding helpers
# ----------------------------------------------------------------------------

def raw_frame(ftype, flags, sid, payload=b"", length=None, reserved=False):
    """A frame built by hand: any type, flags, length and reserved bit."""
    if length is None:
        length = len(payload)
    sid_word = (sid & 0x7FFFFFFF) | (0x80000000 if reserved else 0)
    return struct.pack(">I", length)[1:] + bytes([ftype, flags]) + struct.pack(">I", sid_word) + payload


def hpack_int(value, prefix_bits, first=0):
    """RFC 7541 5.1 integer with `first` holding the bits above the prefix."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = bytearray([first | limit])
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def hpack_str(s):
    if isinstance(s, str):
        s = s.encode()
    return hpack_int(len(s), 7, 0) + s


def lit(name, value, indexing=False):
    """A literal header field with a new (literal) name, no Huffman, never touching our encoder."""
    if indexing:
        return b"\x40" + hpack_str(name) + hpack_str(value)
    return b"\x00" + hpack_str(name) + hpack_str(value)


def raw_block(headers):
    return b"".join(lit(n, v) for n, v in headers)


def settings_payload(pairs):
    return b"".join(struct.pack(">HI", k, v) for k, v in pairs)


# ----------------------------------------------------------------------------
# Connection
# ----------------------------------------------------------------------------

class Conn:
    """One client connection. Frames in are parsed with hyperframe; HEADERS/CONTINUATION are
    joined and decoded (the decoded list is put on the HEADERS frame as `.headers`)."""

    def __init__(self, cfg, transport, alpn="h2"):
        self.cfg = cfg
        self.transport = transport
        host, port = cfg.targets[transport]
        self.authority = cfg.host or f"{host}:{port}"
        self.scheme = "https" if transport == "h2" else "http"
        raw = socket.create_connection((host, port), timeout=cfg.timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if transport == "h2":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols([alpn])
            self.sock = ctx.wrap_socket(raw, server_hostname=cfg.host or host)
            got = self.sock.selected_alpn_protocol()
            if got != alpn:
                self.sock.close()
                raise CaseFail(f"ALPN selected {got!r}, wanted {alpn!r}")
        else:
            self.sock = raw
        self.buf = bytearray()
        self.enc = hpack.Encoder()
        self.dec = hpack.Decoder(max_header_list_size=1 << 24)
        self.server_settings = {}
        self.closed = False
        self.pending_block = None  # (headers frame, bytearray)
        self.auto_ack = True
        self.auto_window = False
        self.first_frame = None
        self.bytes_sent = 0

    # -- sending --
    def send(self, data, timeout=None):
        self.sock.settimeout(self.cfg.timeout if timeout is None else timeout)
        try:
            self.sock.sendall(data)
            self.bytes_sent += len(data)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError) as e:
            if isinstance(e, (socket.timeout, TimeoutError)):
                raise
            self.closed = True

    def send_frame(self, f):
        self.send(f.serialize())

    def settings(self, pairs=(), ack=False):
        self.send(raw_frame(T_SETTINGS, F_ACK if ack else 0, 0, settings_payload(pairs)))

    def ping(self, data=b"h2check!", ack=False):
        self.send(raw_frame(T_PING, F_ACK if ack else 0, 0, data))

    def window_update(self, sid, inc):
        self.send(raw_frame(T_WINDOW, 0, sid, struct.pack(">I", inc)))

    def rst(self, sid, code):
        self.send(raw_frame(T_RST, 0, sid, struct.pack(">I", code)))

    def data(self, sid, payload, end=False):
        self.send(raw_frame(T_DATA, F_END_STREAM if end else 0, sid, payload))

    def headers(self, sid, block, end_stream=True, end_headers=True, prio=None, extra_flags=0):
        flags = extra_flags | (F_END_STREAM if end_stream else 0) | (F_END_HEADERS if end_headers else 0)
        payload = block
        if prio is not None:
            dep, weight, excl = prio
            flags |= F_PRIORITY
            payload = struct.pack(">IB", (dep & 0x7FFFFFFF) | (0x80000000 if excl else 0), weight) + block
        self.send(raw_frame(T_HEADERS, flags, sid, payload))

    def continuation(self, sid, block, end_headers=True):
        self.send(raw_frame(T_CONT, F_END_HEADERS if end_headers else 0, sid, block))

    def req_fields(self, method="GET", path=None, extra=()):
        if path is None:
            path = self.cfg.post if method == "POST" else self.cfg.index
        return [(":method", method), (":scheme", self.scheme), (":path", path),
                (":authority", self.authority)] + list(extra)

    def req_block(self, method="GET", path=None, extra=()):
        """A well-formed request header block, encoded with the connection's HPACK encoder."""
        return self.enc.encode(self.req_fields(method, path, extra))

    def request(self, sid, method="GET", path=None, extra=(), end_stream=True):
        self.headers(sid, self.req_block(method, path, extra), end_stream=end_stream)

    # -- receiving --
    def _fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        self.sock.settimeout(max(remaining, 0.001))
        try:
            chunk = self.sock.recv(1 << 17)
        except (socket.timeout, TimeoutError):
            return False
        except ssl.SSLWantReadError:
            return False
        except (ConnectionResetError, BrokenPipeError, ssl.SSLError, OSError):
            self.closed = True
            return True
        if not chunk:
            self.closed = True
            return True
        self.buf += chunk
        return True

    def _take_frame(self):
        if len(self.buf) < 9:
            return None
        length = int.from_bytes(self.buf[0:3], "big")
        if len(self.buf) < 9 + length:
            return None
        head = bytes(self.buf[:9])
        body = bytes(self.buf[9:9 + length])
        del self.buf[:9 + length]
        try:
            f, _ = hf.Frame.parse_frame_header(memoryview(head))
            f.parse_body(memoryview(body))
        except Exception as e:  # noqa: BLE001 - the server sent a malformed frame
            raise CaseFail(f"server sent a malformed frame (type {head[3]}): {e}")
        f.raw_length = length
        return f

    def event(self, timeout=None, deadline=None):
        """The next event: a frame, or the strings 'closed' / 'timeout'."""
        if deadline is None:
            deadline = time.monotonic() + (self.cfg.timeout if timeout is None else timeout)
        while True:
            f = self._take_frame()
            if f is not None:
                f = self._digest(f)
                if f is None:
                    continue
                return f
            if self.closed:
                return "closed"
            if not self._fill(deadline):
                return "timeout"

    def _digest(self, f):
        if self.first_frame is None:
            self.first_frame = f
        if isinstance(f, hf.SettingsFrame) and "ACK" not in f.flags:
            self.server_settings.update(f.settings)
            if self.auto_ack:
                self.settings(ack=True)
        elif isinstance(f, hf.PingFrame) and "ACK" not in f.flags and self.auto_ack:
            self.ping(f.opaque_data, ack=True)
        elif isinstance(f, hf.DataFrame) and self.auto_window and f.flow_controlled_length > 0:
            self.window_update(0, f.flow_controlled_length)
            if "END_STREAM" not in f.flags:
                self.window_update(f.stream_id, f.flow_controlled_length)
        if isinstance(f, hf.HeadersFrame):
            if "END_HEADERS" in f.flags:
                f.headers = self._decode(f.data)
                return f
            self.pending_block = (f, bytearray(f.data))
            return None
        if isinstance(f, hf.ContinuationFrame) and self.pending_block is not None:
            hdr, block = self.pending_block
            block += f.data
            if "END_HEADERS" in f.flags:
                self.pending_block = None
                hdr.headers = self._decode(bytes(block))
                return hdr
            return None
        return f

    def _decode(self, block):
        try:
            return [(n, v) for n, v in self.dec.decode(block)]
        except Exception as e:  # noqa: BLE001
            raise CaseFail(f"cannot decode the server's header block: {e}")

    def handshake(self, settings=(), preface=True):
        if preface:
            self.send(PREFACE)
        self.settings(settings)
        got_settings = got_ack = False
        deadline = time.monotonic() + self.cfg.timeout
        while not (got_settings and got_ack):
            ev = self.event(deadline=deadline)
            if ev == "closed":
                raise CaseFail("connection closed during the handshake")
            if ev == "timeout":
                raise CaseFail("handshake timed out (no SETTINGS/ACK from the server)")
            if isinstance(ev, hf.SettingsFrame):
                if "ACK" in ev.flags:
                    got_ack = True
                else:
                    got_settings = True
            elif isinstance(ev, hf.GoAwayFrame):
                raise CaseFail(f"GOAWAY({ename(ev.error_code)}) during the handshake")
        return self

    def max_frame_size(self):
        return self.server_settings.get(S_MAX_FRAME_SIZE, 16384)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def describe(ev):
    if isinstance(ev, str):
        return ev
    name = type(ev).__name__.replace("Frame", "").upper()
    if isinstance(ev, hf.GoAwayFrame):
        return f"GOAWAY({ename(ev.error_code)})"
    if isinstance(ev, hf.RstStreamFrame):
        return f"RST_STREAM({ename(ev.error_code)}) on {ev.stream_id}"
    if isinstance(ev, hf.HeadersFrame):
        return f"HEADERS on {ev.stream_id} :status {status_of(ev)}"
    return f"{name} on {ev.stream_id}"


def status_of(headers_frame):
    for n, v in getattr(headers_frame, "headers", []):
        if n == ":status":
            return v
    return None


# ----------------------------------------------------------------------------
# Verifiers (pass rules)
# ----------------------------------------------------------------------------

def wrong_code(c, ev, codes):
    """A GOAWAY/RST_STREAM with an unexpected code: h2spec keeps waiting and passes if the
    connection then closes; with --strict it fails at once."""
    want = '/'.join(ename(x) for x in codes)
    if c.cfg.strict:
        raise CaseFail(f"{describe(ev)}, expected {want}")
    return f"lenient: {describe(ev)}, RFC wants {want}"


def expect_connection_error(c, *codes, timeout=None):
    deadline = time.monotonic() + (c.cfg.timeout if timeout is None else timeout)
    last = None
    wrong = None
    while True:
        ev = c.event(deadline=deadline)
        if ev == "closed":
            return wrong
        if ev == "timeout":
            if wrong:
                raise CaseFail(f"{wrong.split(': ', 1)[1]}, and the connection was not closed")
            raise CaseFail(f"timeout (last seen: {describe(last) if last else 'nothing'}); "
                           f"expected GOAWAY({'/'.join(ename(x) for x in codes)}) or close")
        if isinstance(ev, hf.GoAwayFrame):
            if ev.error_code in codes:
                return None
            wrong = wrong or wrong_code(c, ev, codes)
        last = ev


def expect_stream_error(c, *codes, sid=None, timeout=None):
    deadline = time.monotonic() + (c.cfg.timeout if timeout is None else timeout)
    last = None
    answered = None
    done = False  # the answer was complete (END_STREAM)
    wrong = None
    while True:
        ev = c.event(deadline=deadline)
        if ev == "closed":
            return wrong
        if ev == "timeout":
            if wrong:
                raise CaseFail(f"{wrong.split(': ', 1)[1]}, and the connection was not closed")
            if answered is not None and done:
                if c.cfg.accept_4xx and answered.startswith("4"):
                    return
                raise CaseFail(f"answered :status {answered} without RST_STREAM "
                               f"({'/'.join(ename(x) for x in codes)})")
            raise CaseFail(f"timeout (last seen: {describe(last) if last else 'nothing'}); "
                           f"expected RST_STREAM/GOAWAY({'/'.join(ename(x) for x in codes)}) or close")
        if isinstance(ev, (hf.GoAwayFrame, hf.RstStreamFrame)):
            if ev.error_code in codes:
                return None
            if answered is not None and done:
                raise CaseFail(f"answered :status {answered}, then {describe(ev)}; expected a stream "
                               f"error ({'/'.join(ename(x) for x in codes)})")
            wrong = wrong or wrong_code(c, ev, codes)
        if isinstance(ev, hf.HeadersFrame) and (sid is None or ev.stream_id == sid) and status_of(ev):
            answered = status_of(ev)
            if "END_STREAM" in ev.flags:
                done = True
                # Allow a short grace for an RST_STREAM after the answer.
                deadline = min(deadline, time.monotonic() + 0.3)
        if (isinstance(ev, hf.DataFrame) and answered and "END_STREAM" in ev.flags
                and (sid is None or ev.stream_id == sid)):
            done = True
            deadline = min(deadline, time.monotonic() + 0.3)
        last = ev


def expect_ping_ack(c, data=b"h2check\x01", timeout=None, what="PING ACK"):
    c.ping(data)
    deadline = time.monotonic() + (c.cfg.timeout if timeout is None else timeout)
    while True:
        ev = c.event(deadline=deadline)
        if ev in ("closed", "timeout"):
            raise CaseFail(f"{ev} while waiting for the {what}")
        if isinstance(ev, hf.GoAwayFrame):
            raise CaseFail(f"{describe(ev)} while waiting for the {what}")
        if isinstance(ev, hf.PingFrame) and "ACK" in ev.flags:
            if ev.opaque_data == data:
                return
            raise CaseFail(f"PING ACK with wrong payload {ev.opaque_data!r}")


def expect_closed_or_ignored(c, *codes):
    """The frame is either ignored (a following PING gets its ACK) or a STREAM_CLOSED-ish error."""
    data = b"ignored?"
    c.ping(data)
    deadline = time.monotonic() + c.cfg.timeout
    while True:
        ev = c.event(deadline=deadline)
        if ev == "closed":
            return
        if ev == "timeout":
            raise CaseFail("timeout: neither an error nor the PING ACK")
        if isinstance(ev, (hf.GoAwayFrame, hf.RstStreamFrame)):
            if ev.error_code in codes:
                return
            raise CaseFail(f"{describe(ev)}, expected {'/'.join(ename(x) for x in codes)} or nothing")
        if isinstance(ev, hf.PingFrame) and "ACK" in ev.flags and ev.opaque_data == data:
            return


class Response:
    def __init__(self):
        self.headers = []
        self.trailers = []
        self.body = bytearray()
        self.data_frames = []
        self.done = False

    @property
    def status(self):
        for n, v in self.headers:
            if n == ":status":
                return int(v)
        return None

    def header(self, name):
        for n, v in self.headers:
            if n == name:
                return v
        return None


def read_responses(c, sids, timeout=None, stop_on_rst=True):
    """Reads until every stream in `sids` has ended; returns {sid: Response}."""
    deadline = time.monotonic() + (c.cfg.timeout if timeout is None else timeout)
    out = {s: Response() for s in sids}
    while not all(r.done for r in out.values()):
        ev = c.event(deadline=deadline)
        if ev in ("closed", "timeout"):
            pend = [s for s, r in out.items() if not r.done]
            raise CaseFail(f"{ev} while waiting for the response on stream(s) {pend}")
        if isinstance(ev, hf.GoAwayFrame):
            raise CaseFail(f"{describe(ev)} while waiting for responses")
        sid = getattr(ev, "stream_id", 0)
        if sid not in out:
            continue
        r = out[sid]
        if isinstance(ev, hf.RstStreamFrame):
            raise CaseFail(f"{describe(ev)} while waiting for the response")
        if isinstance(ev, hf.HeadersFrame):
            st = status_of(ev)
            if st is not None and st.startswith("1"):
                continue
            if not r.headers:
                r.headers = ev.headers
            else:
                r.trailers = ev.headers
            if "END_STREAM" in ev.flags:
                r.done = True
        elif isinstance(ev, hf.DataFrame):
            r.body += ev.data
            r.data_frames.append(len(ev.data))
            if "END_STREAM" in ev.flags:
                r.done = True
    return out


def expect_headers(c, sid, timeout=None):
    deadline = time.monotonic() + (c.cfg.timeout if timeout is None else timeout)
    while True:
        ev = c.event(deadline=deadline)
        if ev in ("closed", "timeout"):
            raise CaseFail(f"{ev} while waiting for a response HEADERS frame")
        if isinstance(ev, (hf.GoAwayFrame, hf.RstStreamFrame)):
            raise CaseFail(f"{describe(ev)} instead of a response")
        if isinstance(ev, hf.HeadersFrame) and ev.stream_id == sid:
            return ev


def collect_data(c, sid, want, timeout=None, settle=0.3):
    """Collects DATA on `sid` until `want` bytes arrived, then waits `settle` s for any excess."""
    deadline = time.monotonic() + (c.cfg.timeout if timeout is None else timeout)
    got = 0
    sizes = []
    while True:
        ev = c.event(deadline=deadline)
        if ev == "timeout":
            if got >= want:
                return got, sizes
            raise CaseFail(f"timeout with {got} of {want} DATA bytes received")
        if ev == "closed":
            raise CaseFail(f"connection closed after {got} DATA bytes")
        if isinstance(ev, (hf.GoAwayFrame, hf.RstStreamFrame)):
            raise CaseFail(f"{describe(ev)} after {got} DATA bytes")
        if isinstance(ev, hf.DataFrame) and ev.stream_id == sid:
            got += len(ev.data)
            sizes.append(len(ev.data))
            if got > want:
                raise CaseFail(f"received {got} DATA bytes, the window allowed only {want} (frames {sizes})")
            if got == want:
                deadline = min(deadline, time.monotonic() + settle)
            if "END_STREAM" in ev.flags and got < want:
                raise CaseFail(f"body ended after {got} bytes; need a body of > {want} bytes")


# ----------------------------------------------------------------------------
# Cases
# ----------------------------------------------------------------------------

CASES = []


def case(cid, title, transports=("h2c", "h2"), group="conformance", site=False):
    def wrap(fn):
        CASES.append(dict(id=cid, title=title, fn=fn, transports=transports, group=group, site=site))
        return fn
    return wrap


def hs(cfg, t, settings=()):
    return Conn(cfg, t).handshake(settings)


# 3.5 connection preface ------------------------------------------------------

@case("3.5/1", "server sends SETTINGS first and ACKs the client's SETTINGS")
def _(cfg, t):
    c = hs(cfg, t)
    if not isinstance(c.first_frame, hf.SettingsFrame) or "ACK" in c.first_frame.flags:
        raise CaseFail(f"first frame from the server was {describe(c.first_frame)}")
    expect_ping_ack(c)


@case("3.5/2", "invalid connection preface -> connection error")
def _(cfg, t):
    c = Conn(cfg, t)
    c.send(b"INVALID CONNECTION PREFACE\r\n\r\n")
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("3.5/3", "preface followed by a PING instead of SETTINGS -> PROTOCOL_ERROR")
def _(cfg, t):
    c = Conn(cfg, t)
    c.send(PREFACE + raw_frame(T_PING, 0, 0, b"\0" * 8))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("3.5/4", "HTTP/1.1 GET on the h2c port is still served", transports=("h2c",))
def _(cfg, t):
    host, port = cfg.targets["h2c"]
    status = http1_get(host, port, None, cfg.index, cfg.host or f"{host}:{port}", cfg.timeout)
    if status != 200:
        raise CaseFail(f"HTTP/1.1 GET {cfg.index} answered {status}")


# 4.1 frame format -----------------------------------------------------------

@case("4.1/1", "frame of unknown type is ignored")
def _(cfg, t):
    c = hs(cfg, t)
    c.send(raw_frame(0x16, 0, 0, b"\0" * 8))
    expect_ping_ack(c)


@case("4.1/2", "undefined flags on a PING are ignored")
def _(cfg, t):
    c = hs(cfg, t)
    data = b"flagtest"
    c.send(raw_frame(T_PING, 0x16 & ~F_ACK, 0, data))
    deadline = time.monotonic() + cfg.timeout
    while True:
        ev = c.event(deadline=deadline)
        if isinstance(ev, str) or isinstance(ev, hf.GoAwayFrame):
            raise CaseFail(f"{describe(ev)} instead of the PING ACK")
        if isinstance(ev, hf.PingFrame) and "ACK" in ev.flags and ev.opaque_data == data:
            return


@case("4.1/3", "reserved bit of the frame header set is ignored")
def _(cfg, t):
    c = hs(cfg, t)
    data = b"reserved"
    c.send(raw_frame(T_PING, 0, 0, data, reserved=True))
    deadline = time.monotonic() + cfg.timeout
    while True:
        ev = c.event(deadline=deadline)
        if isinstance(ev, str) or isinstance(ev, hf.GoAwayFrame):
            raise CaseFail(f"{describe(ev)} instead of the PING ACK")
        if isinstance(ev, hf.PingFrame) and "ACK" in ev.flags and ev.opaque_data == data:
            return


# 4.2 frame size --------------------------------------------------------------

@case("4.2/1", "DATA frame of 2^14 octets is accepted")
def _(cfg, t):
    c = hs(cfg, t)
    c.request(1, "POST", extra=[("content-length", "16384")], end_stream=False)
    c.data(1, b"x" * 16384, end=True)
    expect_headers(c, 1)


@case("4.2/2", "DATA frame over SETTINGS_MAX_FRAME_SIZE -> FRAME_SIZE_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    size = c.max_frame_size() + 1
    if size > (1 << 24) - 1:
        raise CaseSkip("server allows frames up to 2^24-1 octets")
    c.request(1, "POST", end_stream=False)
    c.data(1, b"x" * size, end=True)
    return expect_stream_error(c, FRAME_SIZE_ERROR, sid=1)


@case("4.2/3", "HEADERS frame over SETTINGS_MAX_FRAME_SIZE -> connection FRAME_SIZE_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    size = c.max_frame_size() + 1
    if size > (1 << 24) - 1:
        raise CaseSkip("server allows frames up to 2^24-1 octets")
    block = c.req_block()
    i = 0
    while len(block) < size:
        block += lit(f"x-dummy{i}", "d" * 1000)
        i += 1
    c.headers(1, block)
    return expect_connection_error(c, FRAME_SIZE_ERROR)


# 4.3 header compression ------------------------------------------------------

@case("4.3/1", "undecodable header block -> COMPRESSION_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    # A literal with a name length far beyond the block.
    c.headers(1, raw_block(c.req_fields()) + b"\x00\x7f\xff\xff\xff\xff\x0f")
    return expect_connection_error(c, COMPRESSION_ERROR)


@case("4.3/2", "PRIORITY between HEADERS and CONTINUATION -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    block = c.req_block()
    c.headers(1, block[:2], end_headers=False)
    c.send(raw_frame(T_PRIORITY, 0, 1, struct.pack(">IB", 0, 15)))
    c.continuation(1, block[2:])
    return expect_connection_error(c, PROTOCOL_ERROR)


# 5.1 stream states ----------------------------------------------------------

@case("5.1/1", "idle: DATA -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.data(1, b"test", end=True)
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("5.1/2", "idle: RST_STREAM -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.rst(1, CANCEL)
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("5.1/3", "idle: WINDOW_UPDATE -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.window_update(1, 100)
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("5.1/4", "idle: CONTINUATION -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.continuation(1, c.req_block())
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("5.1/5", "half-closed (remote): DATA -> STREAM_CLOSED")
def _(cfg, t):
    c = hs(cfg, t, [(S_INITIAL_WINDOW, 0)])  # keep the stream open on the server side
    c.request(1)
    c.data(1, b"test", end=True)
    return expect_stream_error(c, STREAM_CLOSED, sid=1)


@case("5.1/6", "half-closed (remote): HEADERS -> STREAM_CLOSED/PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t, [(S_INITIAL_WINDOW, 0)])
    c.request(1)
    c.request(1)
    return expect_stream_error(c, STREAM_CLOSED, PROTOCOL_ERROR, sid=1)


@case("5.1/7", "half-closed (remote): CONTINUATION -> STREAM_CLOSED/PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t, [(S_INITIAL_WINDOW, 0)])
    c.request(1)
    c.continuation(1, c.req_block())
    return expect_stream_error(c, STREAM_CLOSED, PROTOCOL_ERROR, sid=1)


@case("5.1/8", "closed: DATA after RST_STREAM -> STREAM_CLOSED or ignored")
def _(cfg, t):
    c = hs(cfg, t)
    c.request(1, "POST", end_stream=False)
    c.rst(1, CANCEL)
    c.data(1, b"test", end=True)
    expect_closed_or_ignored(c, STREAM_CLOSED)


@case("5.1/9", "closed: HEADERS after RST_STREAM -> STREAM_CLOSED/PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.request(1, "POST", end_stream=False)
    c.rst(1, CANCEL)
    c.request(1)
    return expect_stream_error(c, STREAM_CLOSED, PROTOCOL_ERROR)


@case("5.1/10", "closed: CONTINUATION after RST_STREAM -> STREAM_CLOSED/PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.request(1, "POST", end_stream=False)
    c.rst(1, CANCEL)
    c.continuation(1, c.req_block())
    return expect_stream_error(c, STREAM_CLOSED, PROTOCOL_ERROR)


def finished_stream(cfg, t):
    c = hs(cfg, t)
    c.request(1)
    read_responses(c, [1])
    return c


@case("5.1/11", "closed: DATA after END_STREAM -> STREAM_CLOSED")
def _(cfg, t):
    c = finished_stream(cfg, t)
    c.data(1, b"test", end=True)
    return expect_stream_error(c, STREAM_CLOSED)


@case("5.1/12", "closed: HEADERS after END_STREAM -> STREAM_CLOSED/PROTOCOL_ERROR")
def _(cfg, t):
    c = finished_stream(cfg, t)
    c.request(1)
    return expect_stream_error(c, STREAM_CLOSED, PROTOCOL_ERROR)


@case("5.1/13", "closed: CONTINUATION after END_STREAM -> STREAM_CLOSED/PROTOCOL_ERROR")
def _(cfg, t):
    c = finished_stream(cfg, t)
    c.continuation(1, c.req_block())
    return expect_stream_error(c, STREAM_CLOSED, PROTOCOL_ERROR)


# 5.1.1 stream identifiers ---------------------------------------------------

@case("5.1.1/1", "even-numbered stream identifier -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.request(2)
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("5.1.1/2", "stream identifier lower than a previous one -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.request(5)
    c.request(3)
    return expect_connection_error(c, PROTOCOL_ERROR)


# 5.1.2 stream concurrency ---------------------------------------------------

@case("5.1.2/1", "more than SETTINGS_MAX_CONCURRENT_STREAMS -> REFUSED_STREAM/PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t, [(S_INITIAL_WINDOW, 0)])
    limit = c.server_settings.get(S_MAX_CONCURRENT)
    if limit is None or limit > 2000:
        raise CaseSkip(f"SETTINGS_MAX_CONCURRENT_STREAMS is {limit}")
    out = bytearray()
    for i in range(limit + 1):
        out += raw_frame(T_HEADERS, F_END_STREAM | F_END_HEADERS, 2 * i + 1, c.req_block())
    c.send(bytes(out))
    return expect_stream_error(c, REFUSED_STREAM, PROTOCOL_ERROR, sid=2 * limit + 1,
                        timeout=max(cfg.timeout, 3))


# 5.3.1 stream dependencies --------------------------------------------------

@case("5.3.1/1", "HEADERS depending on itself -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.headers(1, c.req_block(), prio=(1, 15, False))
    return expect_stream_error(c, PROTOCOL_ERROR, sid=1)


@case("5.3.1/2", "PRIORITY depending on itself -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.send(raw_frame(T_PRIORITY, 0, 1, struct.pack(">IB", 1, 15)))
    return expect_stream_error(c, PROTOCOL_ERROR, sid=1)


# 5.4.1 connection error handling ---------------------------------------------

@case("5.4.1/1", "connection error: server sends GOAWAY")
def _(cfg, t):
    c = hs(cfg, t)
    c.send(raw_frame(T_PING, 0, 0, b"\0" * 6))
    deadline = time.monotonic() + cfg.timeout
    while True:
        ev = c.event(deadline=deadline)
        if isinstance(ev, str):
            raise CaseFail(f"{ev} without a GOAWAY frame")
        if isinstance(ev, hf.GoAwayFrame):
            return


@case("5.4.1/2", "connection error: connection is closed after GOAWAY")
def _(cfg, t):
    c = hs(cfg, t)
    c.send(raw_frame(T_PING, 0, 0, b"\0" * 6))
    deadline = time.monotonic() + cfg.timeout
    while True:
        ev = c.event(deadline=deadline)
        if ev == "closed":
            return
        if ev == "timeout":
            raise CaseFail("connection not closed")


# 5.5 extending HTTP/2 ---------------------------------------------------------

@case("5.5/1", "unknown extension frame is ignored")
def _(cfg, t):
    c = hs(cfg, t)
    c.send(raw_frame(0xFA, 0xFF, 0, b"extension"))
    c.send(raw_frame(0xFB, 0, 3, b"ext"))
    expect_ping_ack(c)


@case("5.5/2", "unknown extension frame inside a header block -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    block = c.req_block()
    c.headers(1, block[:2], end_headers=False)
    c.send(raw_frame(0xFA, 0, 1, b"extension"))
    c.continuation(1, block[2:])
    return expect_connection_error(c, PROTOCOL_ERROR)


# 6.1 DATA ----------------------------------------------------------------------

@case("6.1/1", "DATA with stream id 0 -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.data(0, b"test", end=True)
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.1/2", "DATA on a stream not open -> STREAM_CLOSED")
def _(cfg, t):
    c = hs(cfg, t, [(S_INITIAL_WINDOW, 0)])
    c.request(1)
    c.data(1, b"test", end=True)
    return expect_stream_error(c, STREAM_CLOSED)


@case("6.1/3", "DATA with pad length >= frame payload -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.request(1, "POST", end_stream=False)
    c.send(raw_frame(T_DATA, F_PADDED | F_END_STREAM, 1, bytes([6]) + b"test"))
    return expect_connection_error(c, PROTOCOL_ERROR)


# 6.2 HEADERS -------------------------------------------------------------------

@case("6.2/1", "HEADERS without END_HEADERS then PRIORITY -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.headers(1, c.req_block(), end_headers=False)
    c.send(raw_frame(T_PRIORITY, 0, 1, struct.pack(">IB", 0, 15)))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.2/2", "HEADERS without END_HEADERS then HEADERS on another stream -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.headers(1, c.req_block(), end_headers=False)
    c.headers(3, c.req_block())
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.2/3", "HEADERS with stream id 0 -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.headers(0, c.req_block())
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.2/4", "HEADERS with pad length >= frame payload -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    block = c.req_block()
    c.send(raw_frame(T_HEADERS, F_PADDED | F_END_HEADERS | F_END_STREAM, 1,
                     bytes([len(block) + 1]) + block))
    return expect_connection_error(c, PROTOCOL_ERROR)


# 6.3 PRIORITY ------------------------------------------------------------------

@case("6.3/1", "PRIORITY with stream id 0 -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.send(raw_frame(T_PRIORITY, 0, 0, struct.pack(">IB", 1, 15)))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.3/2", "PRIORITY of length 4 -> FRAME_SIZE_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.send(raw_frame(T_PRIORITY, 0, 1, struct.pack(">I", 0)))
    return expect_stream_error(c, FRAME_SIZE_ERROR)


@case("6.3/3", "PRIORITY on an idle stream is accepted")
def _(cfg, t):
    c = hs(cfg, t)
    c.send(raw_frame(T_PRIORITY, 0, 9, struct.pack(">IB", 0, 15)))
    expect_ping_ack(c)
    c.request(1)
    read_responses(c, [1])


# 6.4 RST_STREAM ----------------------------------------------------------------

@case("6.4/1", "RST_STREAM with stream id 0 -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.rst(0, CANCEL)
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.4/2", "RST_STREAM on an idle stream -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.rst(7, CANCEL)
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.4/3", "RST_STREAM of length 3 -> FRAME_SIZE_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.request(1, "POST", end_stream=False)
    c.send(raw_frame(T_RST, 0, 1, b"\0\0\x08"))
    return expect_connection_error(c, FRAME_SIZE_ERROR)


# 6.5 SETTINGS ------------------------------------------------------------------

@case("6.5/1", "SETTINGS ACK with a payload -> FRAME_SIZE_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.send(raw_frame(T_SETTINGS, F_ACK, 0, settings_payload([(S_ENABLE_PUSH, 0)])))
    return expect_connection_error(c, FRAME_SIZE_ERROR)


@case("6.5/2", "SETTINGS with a stream id other than 0 -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.send(raw_frame(T_SETTINGS, 0, 1, settings_payload([(S_ENABLE_PUSH, 0)])))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.5/3", "SETTINGS of a length not a multiple of 6 -> FRAME_SIZE_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.send(raw_frame(T_SETTINGS, 0, 0, settings_payload([(S_ENABLE_PUSH, 0)])[:3]))
    return expect_connection_error(c, FRAME_SIZE_ERROR)


@case("6.5.2/1", "SETTINGS_ENABLE_PUSH = 2 -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.settings([(S_ENABLE_PUSH, 2)])
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.5.2/2", "SETTINGS_INITIAL_WINDOW_SIZE = 2^31 -> FLOW_CONTROL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.settings([(S_INITIAL_WINDOW, 1 << 31)])
    return expect_connection_error(c, FLOW_CONTROL_ERROR)


@case("6.5.2/3", "SETTINGS_MAX_FRAME_SIZE = 16383 -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.settings([(S_MAX_FRAME_SIZE, 16383)])
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.5.2/4", "SETTINGS_MAX_FRAME_SIZE = 2^24 -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.settings([(S_MAX_FRAME_SIZE, 1 << 24)])
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.5.2/5", "unknown setting identifier is ignored")
def _(cfg, t):
    c = hs(cfg, t)
    c.settings([(0xFF, 1), (0x4242, 99)])
    expect_ping_ack(c)


@case("6.5.3/1", "SETTINGS with several values is ACKed")
def _(cfg, t):
    c = hs(cfg, t)
    c.settings([(S_HEADER_TABLE_SIZE, 4096), (S_ENABLE_PUSH, 0), (S_MAX_CONCURRENT, 100),
                (S_INITIAL_WINDOW, 65535), (S_MAX_FRAME_SIZE, 16384), (S_MAX_HEADER_LIST, 65536)])
    deadline = time.monotonic() + cfg.timeout
    while True:
        ev = c.event(deadline=deadline)
        if isinstance(ev, str) or isinstance(ev, hf.GoAwayFrame):
            raise CaseFail(f"{describe(ev)} instead of a SETTINGS ACK")
        if isinstance(ev, hf.SettingsFrame) and "ACK" in ev.flags:
            return


@case("6.5.3/2", "server waits for and accepts the client's SETTINGS ACK")
def _(cfg, t):
    c = Conn(cfg, t)
    c.auto_ack = False
    c.send(PREFACE)
    c.settings()
    deadline = time.monotonic() + cfg.timeout
    got = False
    while not got:
        ev = c.event(deadline=deadline)
        if isinstance(ev, str):
            raise CaseFail(f"{ev} before the server's SETTINGS")
        if isinstance(ev, hf.SettingsFrame) and "ACK" not in ev.flags:
            got = True
    c.settings(ack=True)
    c.request(1)
    read_responses(c, [1])


# 6.7 PING ----------------------------------------------------------------------

@case("6.7/1", "PING is answered with an ACK carrying the same payload")
def _(cfg, t):
    c = hs(cfg, t)
    expect_ping_ack(c, b"\x01\x02\x03\x04\x05\x06\x07\x08")


@case("6.7/2", "PING with ACK from the client is not answered")
def _(cfg, t):
    c = hs(cfg, t)
    c.ping(b"unsolici", ack=True)
    c.ping(b"expected")
    deadline = time.monotonic() + cfg.timeout
    while True:
        ev = c.event(deadline=deadline)
        if isinstance(ev, str) or isinstance(ev, hf.GoAwayFrame):
            raise CaseFail(f"{describe(ev)} instead of the PING ACK")
        if isinstance(ev, hf.PingFrame) and "ACK" in ev.flags:
            if ev.opaque_data == b"expected":
                return
            raise CaseFail("the server answered a PING ACK")


@case("6.7/3", "PING with a stream id other than 0 -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.send(raw_frame(T_PING, 0, 1, b"\0" * 8))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.7/4", "PING of length 6 -> FRAME_SIZE_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.send(raw_frame(T_PING, 0, 0, b"\0" * 6))
    return expect_connection_error(c, FRAME_SIZE_ERROR)


# 6.8 GOAWAY --------------------------------------------------------------------

@case("6.8/1", "GOAWAY with a stream id other than 0 -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.send(raw_frame(T_GOAWAY, 0, 1, struct.pack(">II", 0, NO_ERROR)))
    return expect_connection_error(c, PROTOCOL_ERROR)


# 6.9 WINDOW_UPDATE ---------------------------------------------------------------

@case("6.9/1", "WINDOW_UPDATE of 0 on the connection -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.window_update(0, 0)
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.9/2", "WINDOW_UPDATE of 0 on a stream -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.request(1, "POST", end_stream=False)
    c.window_update(1, 0)
    return expect_stream_error(c, PROTOCOL_ERROR, sid=1)


@case("6.9/3", "WINDOW_UPDATE of length 3 -> FRAME_SIZE_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.send(raw_frame(T_WINDOW, 0, 0, b"\0\0\x01"))
    return expect_connection_error(c, FRAME_SIZE_ERROR)


@case("6.9.1/1", "SETTINGS_INITIAL_WINDOW_SIZE = 1: the first DATA frame has 1 octet")
def _(cfg, t):
    c = hs(cfg, t, [(S_INITIAL_WINDOW, 1)])
    c.request(1)
    got, sizes = collect_data(c, 1, 1)
    if sizes and sizes[0] != 1:
        raise CaseFail(f"DATA frames {sizes}")


@case("6.9.1/2", "connection window over 2^31-1 -> FLOW_CONTROL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.window_update(0, 0x7FFFFFFF)
    c.window_update(0, 0x7FFFFFFF)
    return expect_connection_error(c, FLOW_CONTROL_ERROR)


@case("6.9.1/3", "stream window over 2^31-1 -> FLOW_CONTROL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.request(1, "POST", end_stream=False)
    c.window_update(1, 0x7FFFFFFF)
    c.window_update(1, 0x7FFFFFFF)
    return expect_stream_error(c, FLOW_CONTROL_ERROR, sid=1)


@case("6.9.2/1", "SETTINGS_INITIAL_WINDOW_SIZE change applies to open streams")
def _(cfg, t):
    c = hs(cfg, t, [(S_INITIAL_WINDOW, 0)])
    c.request(1)
    # The response HEADERS may or may not come before any window exists; either is fine.
    deadline = time.monotonic() + 0.2
    while True:
        ev = c.event(deadline=deadline)
        if ev == "timeout":
            break
        if isinstance(ev, str) or isinstance(ev, (hf.GoAwayFrame, hf.RstStreamFrame)):
            raise CaseFail(f"{describe(ev)} before the window was opened")
        if isinstance(ev, hf.DataFrame) and ev.data:
            raise CaseFail(f"{len(ev.data)} DATA octets sent into a zero window")
    c.settings([(S_INITIAL_WINDOW, 1)])
    collect_data(c, 1, 1)


@case("6.9.2/2", "a negative stream window is honoured")
def _(cfg, t):
    c = hs(cfg, t, [(S_INITIAL_WINDOW, 3)])
    c.request(1)
    collect_data(c, 1, 3)
    c.settings([(S_INITIAL_WINDOW, 2)])  # window: 0 - (3 - 2) = -1
    c.window_update(1, 2)                  # window: -1 + 2 = 1
    collect_data(c, 1, 1)


@case("6.9.2/3", "SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1 -> FLOW_CONTROL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.settings([(S_INITIAL_WINDOW, 0x80000001)])
    return expect_connection_error(c, FLOW_CONTROL_ERROR)


# 6.x positive forms -------------------------------------------------------------------

@case("6.1/4", "padded DATA frames are accepted")
def _(cfg, t):
    c = hs(cfg, t)
    c.request(1, "POST", extra=[("content-length", "4")], end_stream=False)
    c.send(raw_frame(T_DATA, F_PADDED | F_END_STREAM, 1, bytes([8]) + b"test" + b"\0" * 8))
    expect_headers(c, 1)


@case("6.2/5", "padded HEADERS frame is accepted")
def _(cfg, t):
    c = hs(cfg, t)
    block = c.req_block()
    c.send(raw_frame(T_HEADERS, F_PADDED | F_END_HEADERS | F_END_STREAM, 1, bytes([10]) + block + b"\0" * 10))
    read_responses(c, [1])


@case("6.2/6", "HEADERS with the PRIORITY flag is accepted")
def _(cfg, t):
    c = hs(cfg, t)
    c.headers(1, c.req_block(), prio=(0, 200, True))
    read_responses(c, [1])


# 7 error codes --------------------------------------------------------------------------

@case("7/1", "GOAWAY with an unknown error code is not treated as an error")
def _(cfg, t):
    c = hs(cfg, t)
    c.send(raw_frame(T_GOAWAY, 0, 0, struct.pack(">II", 0, 0xFF)))
    c.ping(b"unknownc")
    deadline = time.monotonic() + cfg.timeout
    while True:
        ev = c.event(deadline=deadline)
        if ev == "closed":
            return "closed after the client's GOAWAY"
        if ev == "timeout":
            raise CaseFail("timeout: neither the PING ACK nor a close")
        if isinstance(ev, hf.GoAwayFrame) and ev.error_code != NO_ERROR:
            raise CaseFail(f"{describe(ev)}")
        if isinstance(ev, hf.PingFrame) and "ACK" in ev.flags:
            return None


@case("7/2", "RST_STREAM with an unknown error code is not treated as an error")
def _(cfg, t):
    c = hs(cfg, t)
    c.request(1, "POST", end_stream=False)
    c.rst(1, 0xFF)
    deadline = time.monotonic() + cfg.timeout
    c.ping(b"unknownr")
    while True:
        ev = c.event(deadline=deadline)
        if isinstance(ev, str) or isinstance(ev, hf.GoAwayFrame):
            raise CaseFail(f"{describe(ev)} instead of the PING ACK")
        if isinstance(ev, hf.PingFrame) and "ACK" in ev.flags:
            return None


# 6.10 CONTINUATION ----------------------------------------------------------------

@case("6.10/1", "several CONTINUATION frames complete a request")
def _(cfg, t):
    c = hs(cfg, t)
    block = c.req_block(extra=[("x-dummy", "d" * 100)])
    n = 4
    step = (len(block) + n - 1) // n
    parts = [block[i:i + step] for i in range(0, len(block), step)]
    c.headers(1, parts[0], end_headers=False)
    for i, p in enumerate(parts[1:]):
        c.continuation(1, p, end_headers=(i == len(parts) - 2))
    read_responses(c, [1])


@case("6.10/2", "CONTINUATION followed by a non-CONTINUATION frame -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    block = c.req_block()
    c.headers(1, block[:2], end_headers=False)
    c.continuation(1, block[2:4], end_headers=False)
    c.data(1, b"test", end=True)
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.10/3", "CONTINUATION with stream id 0 -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    block = c.req_block()
    c.headers(1, block[:2], end_headers=False)
    c.continuation(0, block[2:])
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.10/4", "CONTINUATION after HEADERS with END_HEADERS -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.headers(1, c.req_block(), end_stream=True)
    c.continuation(1, raw_block([("x-dummy", "d")]))
    return expect_connection_error(c, PROTOCOL_ERROR, STREAM_CLOSED)


@case("6.10/5", "CONTINUATION after CONTINUATION with END_HEADERS -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    block = c.req_block()
    c.headers(1, block[:2], end_headers=False)
    c.continuation(1, block[2:], end_headers=True)
    c.continuation(1, raw_block([("x-dummy", "d")]))
    return expect_connection_error(c, PROTOCOL_ERROR, STREAM_CLOSED)


@case("6.10/6", "CONTINUATION after DATA -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.request(1, "POST", end_stream=False)
    c.data(1, b"test")
    c.continuation(1, raw_block([("x-dummy", "d")]))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.10/7", "CONTINUATION on another stream than the HEADERS -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    block = c.req_block()
    c.headers(1, block[:2], end_headers=False)
    c.continuation(3, block[2:])
    return expect_connection_error(c, PROTOCOL_ERROR)


# 8.1 HTTP message exchanges --------------------------------------------------------

@case("8.1/1", "request with trailers is answered")
def _(cfg, t):
    c = hs(cfg, t)
    c.request(1, "POST", end_stream=False)
    c.data(1, b"test")
    c.headers(1, c.enc.encode([("x-trailer", "yes")]), end_stream=True)
    expect_headers(c, 1)


@case("8.1/2", "second HEADERS without END_STREAM -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.request(1, "POST", end_stream=False)
    c.data(1, b"test")
    c.headers(1, c.enc.encode([("x-trailer", "yes")]), end_stream=False)
    return expect_stream_error(c, PROTOCOL_ERROR, sid=1)


def malformed(cfg, t, fields, codes=(PROTOCOL_ERROR,), end_stream=True):
    c = hs(cfg, t)
    c.headers(1, raw_block(fields), end_stream=end_stream)
    return expect_stream_error(c, *codes, sid=1)


def base_fields(c_or_cfg, t, method="GET", path=None):
    cfg = c_or_cfg
    host, port = cfg.targets[t]
    return [(":method", method), (":scheme", "https" if t == "h2" else "http"),
            (":path", (cfg.post if method == "POST" else cfg.index) if path is None else path),
            (":authority", cfg.host or f"{host}:{port}")]


@case("8.1.2/1", "upper-case header field name -> PROTOCOL_ERROR")
def _(cfg, t):
    return malformed(cfg, t, base_fields(cfg, t) + [("X-TEST", "ok")])


@case("8.1.2.1/1", "unknown pseudo-header -> PROTOCOL_ERROR")
def _(cfg, t):
    return malformed(cfg, t, base_fields(cfg, t) + [(":test", "ok")])


@case("8.1.2.1/2", "response pseudo-header in a request -> PROTOCOL_ERROR")
def _(cfg, t):
    return malformed(cfg, t, base_fields(cfg, t) + [(":status", "200")])


@case("8.1.2.1/3", "pseudo-header after a regular header -> PROTOCOL_ERROR")
def _(cfg, t):
    f = base_fields(cfg, t)
    return malformed(cfg, t, f[:3] + [("x-test", "ok")] + f[3:])


@case("8.1.2.1/4", "pseudo-header in trailers -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.headers(1, raw_block(base_fields(cfg, t, "POST")), end_stream=False)
    c.data(1, b"test")
    c.headers(1, raw_block([(":method", "POST")]), end_stream=True)
    return expect_stream_error(c, PROTOCOL_ERROR, sid=1)


@case("8.1.2.2/1", "connection-specific header field -> PROTOCOL_ERROR")
def _(cfg, t):
    return malformed(cfg, t, base_fields(cfg, t) + [("connection", "keep-alive")])


@case("8.1.2.2/2", "TE header other than \"trailers\" -> PROTOCOL_ERROR")
def _(cfg, t):
    return malformed(cfg, t, base_fields(cfg, t) + [("te", "trailers, deflate")])


@case("8.1.2.2/3", "TE: trailers is accepted")
def _(cfg, t):
    c = hs(cfg, t)
    c.headers(1, raw_block(base_fields(cfg, t) + [("te", "trailers")]))
    read_responses(c, [1])


@case("8.1.2.3/1", "empty :path -> PROTOCOL_ERROR")
def _(cfg, t):
    return malformed(cfg, t, base_fields(cfg, t, path=""))


@case("8.1.2.3/2", "missing :method -> PROTOCOL_ERROR")
def _(cfg, t):
    return malformed(cfg, t, [f for f in base_fields(cfg, t) if f[0] != ":method"])


@case("8.1.2.3/3", "missing :scheme -> PROTOCOL_ERROR")
def _(cfg, t):
    return malformed(cfg, t, [f for f in base_fields(cfg, t) if f[0] != ":scheme"])


@case("8.1.2.3/4", "missing :path -> PROTOCOL_ERROR")
def _(cfg, t):
    return malformed(cfg, t, [f for f in base_fields(cfg, t) if f[0] != ":path"])


@case("8.1.2.3/5", "duplicated :method -> PROTOCOL_ERROR")
def _(cfg, t):
    f = base_fields(cfg, t)
    return malformed(cfg, t, f[:1] + [(":method", "GET")] + f[1:])


@case("8.1.2.3/6", "duplicated :scheme -> PROTOCOL_ERROR")
def _(cfg, t):
    f = base_fields(cfg, t)
    return malformed(cfg, t, f[:2] + [f[1]] + f[2:])


@case("8.1.2.3/7", "duplicated :path -> PROTOCOL_ERROR")
def _(cfg, t):
    f = base_fields(cfg, t)
    return malformed(cfg, t, f[:3] + [f[2]] + f[3:])


@case("8.1.2.6/1", "content-length differs from the single DATA frame -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.headers(1, raw_block(base_fields(cfg, t, "POST") + [("content-length", "1")]), end_stream=False)
    c.data(1, b"test", end=True)
    return expect_stream_error(c, PROTOCOL_ERROR, sid=1)


@case("8.1.2.6/2", "content-length differs from the sum of DATA frames -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.headers(1, raw_block(base_fields(cfg, t, "POST") + [("content-length", "8")]), end_stream=False)
    c.data(1, b"test")
    c.data(1, b"test!", end=True)
    return expect_stream_error(c, PROTOCOL_ERROR, sid=1)


# 8.2 server push ---------------------------------------------------------------------

@case("8.2/1", "PUSH_PROMISE from the client -> PROTOCOL_ERROR")
def _(cfg, t):
    c = hs(cfg, t)
    c.request(1, "POST", end_stream=False)
    c.send(raw_frame(T_PUSH, F_END_HEADERS, 1, struct.pack(">I", 2) + c.req_block()))
    return expect_connection_error(c, PROTOCOL_ERROR)


# HPACK (RFC 7541) -------------------------------------------------------------------

def hpack_case(cfg, t, tail, head=b""):
    c = hs(cfg, t)
    c.headers(1, head + raw_block(base_fields(cfg, t)) + tail)
    return expect_connection_error(c, COMPRESSION_ERROR)


@case("hpack/2.3.3/1", "indexed field with index 0 -> COMPRESSION_ERROR")
def _(cfg, t):
    return hpack_case(cfg, t, b"\x80")


@case("hpack/2.3.3/2", "indexed field beyond the tables -> COMPRESSION_ERROR")
def _(cfg, t):
    return hpack_case(cfg, t, hpack_int(70, 7, 0x80))


@case("hpack/2.3.3/3", "literal with a name index beyond the tables -> COMPRESSION_ERROR")
def _(cfg, t):
    return hpack_case(cfg, t, hpack_int(70, 6, 0x40) + hpack_str("v"))


@case("hpack/4.2/1", "table size update above SETTINGS_HEADER_TABLE_SIZE -> COMPRESSION_ERROR")
def _(cfg, t):
    return hpack_case(cfg, t, b"", head=hpack_int(4097, 5, 0x20))


@case("hpack/4.2/2", "table size update after a header field -> COMPRESSION_ERROR")
def _(cfg, t):
    return hpack_case(cfg, t, hpack_int(0, 5, 0x20))


@case("hpack/4.2/3", "table size update to 0 at the start of a block is accepted")
def _(cfg, t):
    c = hs(cfg, t)
    c.headers(1, hpack_int(0, 5, 0x20) + raw_block(base_fields(cfg, t)))
    read_responses(c, [1])


@case("hpack/5.2/1", "Huffman string containing EOS -> COMPRESSION_ERROR")
def _(cfg, t):
    return hpack_case(cfg, t, b"\x00" + hpack_str("x-test") + b"\x84\xff\xff\xff\xff")


@case("hpack/5.2/2", "Huffman padding longer than 7 bits -> COMPRESSION_ERROR")
def _(cfg, t):
    return hpack_case(cfg, t, b"\x00" + hpack_str("x-test") + b"\x82\x1f\xff")


@case("hpack/5.2/3", "Huffman padding not all ones -> COMPRESSION_ERROR")
def _(cfg, t):
    return hpack_case(cfg, t, b"\x00" + hpack_str("x-test") + b"\x81\x18")


@case("hpack/6.2/1", "literals without indexing, never indexed and Huffman-coded are accepted")
def _(cfg, t):
    c = hs(cfg, t)
    f = base_fields(cfg, t)
    huff = hpack.huffman.HuffmanEncoder(hpack.huffman_constants.REQUEST_CODES,
                                        hpack.huffman_constants.REQUEST_CODES_LENGTH)
    hv = huff.encode(b"huffman-value")
    block = (lit(f[0][0], f[0][1]) + b"\x10" + hpack_str(f[1][0]) + hpack_str(f[1][1])  # never indexed
             + lit(f[2][0], f[2][1]) + lit(f[3][0], f[3][1])
             + b"\x00" + hpack_str("x-huff") + hpack_int(len(hv), 7, 0x80) + hv
             + hpack_int(16, 4, 0x10) + hpack_str("gzip"))  # never indexed, static name 16
    c.headers(1, block)
    r = read_responses(c, [1])[1]
    if r.status != 200:
        raise CaseFail(f"status {r.status}")


@case("hpack/6.1/1", "dynamic table entries are reused across streams")
def _(cfg, t):
    c = hs(cfg, t)
    fields = base_fields(cfg, t)
    first = b"".join(lit(n, v, indexing=True) for n, v in fields)  # entries 65..62, newest first
    c.headers(1, first)
    read_responses(c, [1])
    # :method 65, :scheme 64, :path 63, :authority 62
    c.headers(3, bytes([0x80 | 65, 0x80 | 64, 0x80 | 63, 0x80 | 62]))
    r = read_responses(c, [3])[3]
    if r.status != 200:
        raise CaseFail(f"request from dynamic-table references answered {r.status}")


# HTTP semantics over h2 --------------------------------------------------------------

def get(cfg, t, path, method="GET", extra=(), timeout=None, body=None, settings=()):
    c = hs(cfg, t, settings)
    c.auto_window = True
    c.request(1, method, path, extra, end_stream=body is None)
    if body is not None:
        c.data(1, body, end=True)
    r = read_responses(c, [1], timeout=timeout)[1]
    c.close()
    return r


@case("http/1", "GET index: 200, body length = content-length", group="http")
def _(cfg, t):
    r = get(cfg, t, cfg.index)
    if r.status != 200:
        raise CaseFail(f"status {r.status}")
    cl = r.header("content-length")
    if cl is not None and int(cl) != len(r.body):
        raise CaseFail(f"content-length {cl}, body {len(r.body)}")
    if not r.body:
        raise CaseFail("empty body")


@case("http/2", "HEAD index: 200 without a body", group="http")
def _(cfg, t):
    r = get(cfg, t, cfg.index, "HEAD")
    if r.status != 200:
        raise CaseFail(f"status {r.status}")
    if r.body:
        raise CaseFail(f"{len(r.body)} body octets in DATA")


@case("http/3", "GET a missing file: 404", group="http")
def _(cfg, t):
    r = get(cfg, t, cfg.missing)
    if r.status != 404:
        raise CaseFail(f"status {r.status}")


@case("http/4", "GET /login: 405", group="http", site=True)
def _(cfg, t):
    r = get(cfg, t, cfg.login)
    if r.status != 405:
        raise CaseFail(f"status {r.status}")


@case("http/5", "conditional GET with the ETag: 304", group="http")
def _(cfg, t):
    r = get(cfg, t, cfg.index)
    etag = r.header("etag")
    if not etag:
        raise CaseFail("no etag in the first answer")
    r2 = get(cfg, t, cfg.index, extra=[("if-none-match", etag)])
    if r2.status != 304:
        raise CaseFail(f"status {r2.status} for if-none-match {etag}")
    if r2.body:
        raise CaseFail("304 with a body")


@case("http/6", "big file through flow control (WINDOW_UPDATEs)", group="http")
def _(cfg, t):
    if not cfg.big:
        raise CaseSkip("no --big path")
    r = get(cfg, t, cfg.big, timeout=max(cfg.timeout, 15))
    if r.status != 200:
        raise CaseFail(f"status {r.status}")
    cl = r.header("content-length")
    if cl is None or int(cl) != len(r.body):
        raise CaseFail(f"content-length {cl}, body {len(r.body)}")
    if len(r.body) <= 65535:
        raise CaseFail(f"only {len(r.body)} octets: too small to test flow control")


@case("http/7", "POST /login with a form: 2xx/3xx and a Set-Cookie", group="http", site=True)
def _(cfg, t):
    body = cfg.login_body.encode()
    r = get(cfg, t, cfg.login, "POST", body=body,
            extra=[("content-type", "application/x-www-form-urlencoded"),
                   ("content-length", str(len(body)))])
    if r.status is None or not (200 <= r.status < 400):
        raise CaseFail(f"status {r.status}")
    if not r.header("set-cookie"):
        raise CaseFail("no set-cookie")


@case("http/8", "10 concurrent streams on one connection are all answered", group="http")
def _(cfg, t):
    c = hs(cfg, t)
    c.auto_window = True
    sids = [2 * i + 1 for i in range(10)]
    out = bytearray()
    for s in sids:
        out += raw_frame(T_HEADERS, F_END_STREAM | F_END_HEADERS, s, c.req_block())
    c.send(bytes(out))
    rs = read_responses(c, sids, timeout=max(cfg.timeout, 5))
    bad = {s: r.status for s, r in rs.items() if r.status != 200}
    if bad:
        raise CaseFail(f"statuses {bad}")


# ----------------------------------------------------------------------------
# Attacks
# ----------------------------------------------------------------------------

def http1_get(host, port, tls_alpn, path, authority, timeout):
    """One HTTP/1.1 GET on a new connection; returns the status code or None."""
    try:
        s = socket.create_connection((host, port), timeout=timeout)
        if tls_alpn:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols([tls_alpn])
            s = ctx.wrap_socket(s, server_hostname=host)
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while b"\r\n" not in data and len(data) < 4096:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        # drain the rest so the server is not left writing into a closed socket
        try:
            s.settimeout(0.5)
            while s.recv(65536):
                pass
        except OSError:
            pass
        s.close()
        m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
        return int(m.group(1)) if m else None
    except (OSError, ssl.SSLError):
        return None


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    return "Z" not in line and "X" not in line.split()[1]
    except OSError:
        return False
    return True


class Victim(threading.Thread):
    """HTTP/1.1 GETs every 50 ms on fresh connections; also samples the server's RSS."""

    def __init__(self, cfg, t):
        super().__init__(daemon=True)
        self.cfg = cfg
        if t == "h2":
            self.host, self.port = cfg.targets["h2"]
            self.alpn = "http/1.1"
        else:
            self.host, self.port = cfg.h1 or cfg.targets["h2c"]
            self.alpn = None
        self.authority = cfg.host or f"{self.host}:{self.port}"
        self.stop = threading.Event()
        self.ok = 0
        self.total = 0
        self.statuses = {}
        self.rss_max = rss_kib(cfg.pid) if cfg.pid else None

    def run(self):
        while not self.stop.is_set():
            t0 = time.monotonic()
            st = http1_get(self.host, self.port, self.alpn, self.cfg.index, self.authority, 2.0)
            self.total += 1
            self.statuses[st] = self.statuses.get(st, 0) + 1
            if st == 200:
                self.ok += 1
            self.sample()
            self.stop.wait(max(0.0, 0.05 - (time.monotonic() - t0)))

    def sample(self):
        if self.cfg.pid:
            r = rss_kib(self.cfg.pid)
            if r is not None and (self.rss_max is None or r > self.rss_max):
                self.rss_max = r


def attack(cid, title):
    def wrap(fn):
        def run(cfg, t):
            base = rss_kib(cfg.pid) if cfg.pid else None
            v = Victim(cfg, t)
            v.start()
            time.sleep(0.1)
            problems = []
            note = ""
            try:
                note = fn(cfg, t, v) or ""
            except CaseFail as e:
                problems.append(str(e))
            finally:
                time.sleep(0.2)
                v.sample()
                v.stop.set()
                v.join(5)
            if v.total == 0:
                problems.append("victim made no requests")
            elif v.ok < 0.95 * v.total:
                problems.append(f"victim got {v.ok}/{v.total} 200s ({v.statuses})")
            if cfg.pid:
                if not pid_alive(cfg.pid):
                    problems.append("server process died")
                elif base is not None and v.rss_max is not None and v.rss_max - base >= 64 * 1024:
                    problems.append(f"VmRSS grew {(v.rss_max - base) // 1024} MiB")
            else:
                host, port = cfg.targets[t]
                try:
                    socket.create_connection((host, port), timeout=2).close()
                except OSError:
                    problems.append("server no longer accepts connections")
            if problems:
                raise CaseFail("; ".join(problems) + (f" [{note}]" if note else ""))
            return note
        CASES.append(dict(id=cid, title=title, fn=run, transports=("h2c", "h2"), group="attack", site=False))
        return fn
    return wrap


class Reaction:
    def __init__(self, kind, code=None, last_sid=None):
        self.kind, self.code, self.last_sid = kind, code, last_sid

    def __str__(self):
        return f"GOAWAY({ename(self.code)})" if self.kind == "goaway" else self.kind


def poll_reaction(c, wait=0.0, watch_rst=False):
    """Reads what has arrived within `wait` s; returns a Reaction on GOAWAY/close (/RST)."""
    deadline = time.monotonic() + wait
    while True:
        ev = c.event(deadline=deadline) if wait > 0 else c.event(timeout=0.001)
        if ev == "timeout":
            return None
        if ev == "closed":
            return Reaction("close")
        if isinstance(ev, hf.GoAwayFrame):
            return Reaction("goaway", ev.error_code, ev.last_stream_id)
        if watch_rst and isinstance(ev, hf.RstStreamFrame) and ev.error_code != NO_ERROR:
            return Reaction(f"RST_STREAM({ename(ev.error_code)})", ev.error_code)
        if isinstance(ev, hf.HeadersFrame) and watch_rst and status_of(ev) in ("431", "400", "503"):
            return Reaction(f"status {status_of(ev)}")


def send_checked(c, data, timeout=1.0):
    """Sends; returns 'blocked' if the send did not complete in `timeout` s, 'close' if reset."""
    try:
        c.send(data, timeout=timeout)
    except (socket.timeout, TimeoutError):
        return "blocked"
    return "close" if c.closed else None


@attack("attack/rapid-reset", "rapid reset (HEADERS + RST_STREAM CANCEL) -> GOAWAY/close within 2000")
def _(cfg, t, v):
    c = hs(cfg, t)
    block = c.req_block()
    block2 = c.req_block()  # now fully indexed: tiny
    sid = 1
    pairs = 0
    t_end = time.monotonic() + 5
    reaction = None
    while pairs < 20000 and time.monotonic() < t_end:
        out = bytearray()
        for _ in range(200):
            out += raw_frame(T_HEADERS, F_END_STREAM | F_END_HEADERS, sid, block if sid == 1 else block2)
            out += raw_frame(T_RST, 0, sid, struct.pack(">I", CANCEL))
            sid += 2
        r = send_checked(c, bytes(out))
        if r == "close":
            reaction = Reaction("close")
            break
        pairs += 200
        reaction = poll_reaction(c, 0.002)
        if r == "blocked" and reaction is None:
            reaction = poll_reaction(c, 1.0)
            if reaction is None:
                raise CaseFail(f"server stopped reading after {pairs} pairs without GOAWAY/close")
        if reaction:
            break
    if reaction is None:
        raise CaseFail(f"accepted {pairs} HEADERS+RST_STREAM pairs without GOAWAY/close")
    if reaction.kind == "goaway" and reaction.code not in (ENHANCE_YOUR_CALM,):
        # another code (e.g. NO_ERROR at a per-connection request limit): the connection must end
        if not wait_close(c, 2.0):
            raise CaseFail(f"{reaction} after {pairs} pairs, and the connection stayed open")
    accepted = pairs
    if reaction.last_sid is not None:
        accepted = min(pairs, (reaction.last_sid + 1) // 2)
    if accepted > 2000:
        raise CaseFail(f"{reaction} only after {accepted} pairs (limit 2000)")
    return f"{reaction} after <= {accepted} pairs"


def wait_close(c, secs):
    deadline = time.monotonic() + secs
    while True:
        ev = c.event(deadline=deadline)
        if ev == "closed":
            return True
        if ev == "timeout":
            return False


CALM_CODES = (ENHANCE_YOUR_CALM, COMPRESSION_ERROR, PROTOCOL_ERROR)


def continuation_flood(cfg, t, payload_fn, head_block, max_ok_frames=None, max_ok_bytes=None):
    c = hs(cfg, t)
    c.headers(1, head_block, end_headers=False)
    frames = 0
    sent = len(head_block)
    t_end = time.monotonic() + 5
    reaction = None
    while time.monotonic() < t_end:
        batch = 1 if frames < 24 else 64
        out = bytearray()
        for _ in range(batch):
            p = payload_fn()
            out += raw_frame(T_CONT, 0, 1, p)
            sent += len(p)
        r = send_checked(c, bytes(out))
        if r == "close":
            reaction = Reaction("close")
            break
        frames += batch
        # Frame by frame at first, giving the server 100 ms to react to each (so the count
        # is exact even on a loaded machine); then in batches.
        reaction = poll_reaction(c, 0.1 if frames <= 24 else 0.001)
        if r == "blocked" and reaction is None:
            reaction = poll_reaction(c, 1.0)
            if reaction is None:
                raise CaseFail(f"server stopped reading after {frames} CONTINUATIONs "
                               f"({sent // 1024} KiB) without GOAWAY/close")
        if reaction:
            break
    if reaction is None:
        raise CaseFail(f"accepted {frames} CONTINUATION frames ({sent // 1024} KiB) without reacting")
    if reaction.kind == "goaway" and reaction.code not in CALM_CODES:
        raise CaseFail(f"{reaction} after {frames} frames")
    if max_ok_frames is not None and frames > max_ok_frames:
        raise CaseFail(f"{reaction} only after {frames} empty CONTINUATIONs (limit {max_ok_frames})")
    if max_ok_bytes is not None and sent > max_ok_bytes:
        raise CaseFail(f"{reaction} only after {sent // 1024} KiB of header block (limit {max_ok_bytes // 1024} KiB)")
    return f"{reaction} after {frames} frames, {sent // 1024} KiB"


@attack("attack/continuation-empty", "CONTINUATION flood, empty frames -> GOAWAY/close after <= 6")
def _(cfg, t, v):
    return continuation_flood(cfg, t, lambda: b"", raw_block(base_fields(cfg, t)), max_ok_frames=6)


@attack("attack/continuation-16k", "CONTINUATION flood, 16 KiB literal bytes -> GOAWAY/close by 128 KiB")
def _(cfg, t, v):
    # A stream of well-formed 1 KiB literal fields (new names, no indexing), cut into 16 KiB
    # CONTINUATION payloads: no single field is suspicious, only the growing block is.
    stream = b"".join(lit(f"x-flood-{i:04d}", "a" * 1000) for i in range(16))
    assert len(stream) < 16384
    pad = 16384 - len(stream)
    stream += lit("x-flood-pad", "b" * (pad - 2 - len("x-flood-pad") - 2)) if pad > 20 else b""
    head = raw_block(base_fields(cfg, t))
    return continuation_flood(cfg, t, lambda: stream[:16384], head, max_ok_bytes=128 * 1024)


def never_read_flood(cfg, t, frame):
    c = hs(cfg, t)
    batch = frame * 1000
    sent = 0
    t_end = time.monotonic() + 5
    while time.monotonic() < t_end:
        r = send_checked(c, batch, timeout=1.0)
        if r == "blocked":
            return f"server stopped reading after {sent // 1024} KiB"
        if r == "close":
            return f"server closed after {sent // 1024} KiB"
        sent += len(batch)
    raise CaseFail(f"server kept reading {sent // (1 << 20)} MiB of unanswerable frames for 5 s "
                   f"with no back-pressure")


def reading_flood(cfg, t, frame_fn, want_ack):
    c = hs(cfg, t)
    acks = 0
    sent = 0
    t_end = time.monotonic() + 1.5
    while time.monotonic() < t_end:
        r = send_checked(c, b"".join(frame_fn(i) for i in range(100)), timeout=1.0)
        sent += 100
        if r == "close":
            return f"server closed after {sent} frames, {acks} ACKs"
        while True:
            ev = c.event(timeout=0.001)
            if isinstance(ev, str):
                if ev == "closed":
                    return f"server closed after {sent} frames, {acks} ACKs"
                break
            if isinstance(ev, hf.GoAwayFrame):
                if ev.error_code == ENHANCE_YOUR_CALM:
                    return f"GOAWAY(ENHANCE_YOUR_CALM) after {sent} frames"
                raise CaseFail(f"{describe(ev)} during the flood")
            if want_ack(ev):
                acks += 1
    # drain the rest
    deadline = time.monotonic() + 1
    while True:
        ev = c.event(deadline=deadline)
        if isinstance(ev, str):
            break
        if want_ack(ev):
            acks += 1
    if acks == 0:
        raise CaseFail(f"no ACKs for {sent} frames")
    return f"{acks} ACKs for {sent} frames"


@attack("attack/settings-flood-noread", "SETTINGS flood without reading: server applies back-pressure")
def _(cfg, t, v):
    return never_read_flood(cfg, t, raw_frame(T_SETTINGS, 0, 0, settings_payload([(S_ENABLE_PUSH, 0)])))


@attack("attack/settings-flood-read", "SETTINGS flood while reading: ACKs come back")
def _(cfg, t, v):
    return reading_flood(cfg, t, lambda i: raw_frame(T_SETTINGS, 0, 0, settings_payload([(S_ENABLE_PUSH, 0)])),
                         lambda ev: isinstance(ev, hf.SettingsFrame) and "ACK" in ev.flags)


@attack("attack/ping-flood-noread", "PING flood without reading: server applies back-pressure")
def _(cfg, t, v):
    return never_read_flood(cfg, t, raw_frame(T_PING, 0, 0, b"pingpong"))


@attack("attack/ping-flood-read", "PING flood while reading: ACKs come back")
def _(cfg, t, v):
    return reading_flood(cfg, t, lambda i: raw_frame(T_PING, 0, 0, struct.pack(">Q", i)),
                         lambda ev: isinstance(ev, hf.PingFrame) and "ACK" in ev.flags)


@attack("attack/hpack-bomb", "HPACK bomb (4000-octet entry referenced 12000 times) is refused")
def _(cfg, t, v):
    c = hs(cfg, t)
    block = raw_block(base_fields(cfg, t)) + lit("x-bomb", "a" * 4000, indexing=True)
    room = c.max_frame_size() if c.max_frame_size() < 16384 * 4 else 16384
    block += bytes([0x80 | 62]) * max(0, room - len(block))
    c.headers(1, block)
    deadline = time.monotonic() + 5
    while True:
        ev = c.event(deadline=deadline)
        if ev == "closed":
            return "closed"
        if ev == "timeout":
            raise CaseFail("no reaction to the HPACK bomb in 5 s")
        if isinstance(ev, hf.GoAwayFrame):
            if ev.error_code in CALM_CODES:
                return describe(ev)
            raise CaseFail(f"{describe(ev)}")
        if isinstance(ev, hf.RstStreamFrame) and ev.stream_id == 1:
            return describe(ev)
        if isinstance(ev, hf.HeadersFrame) and ev.stream_id == 1:
            st = status_of(ev)
            if st in ("431", "400"):
                return f"status {st}"
            raise CaseFail(f"the bomb was answered :status {st}")


@attack("attack/hpack-resize", "HPACK table size update to 2^20 -> COMPRESSION_ERROR")
def _(cfg, t, v):
    c = hs(cfg, t)
    c.headers(1, hpack_int(1 << 20, 5, 0x20) + raw_block(base_fields(cfg, t)))
    return expect_connection_error(c, COMPRESSION_ERROR) or "refused"


@attack("attack/zero-window", "zero-window slow read of 100 streams: RSS bounded, others served")
def _(cfg, t, v):
    c = hs(cfg, t, [(S_INITIAL_WINDOW, 0)])
    n = min(100, c.server_settings.get(S_MAX_CONCURRENT, 100))
    path = cfg.big or cfg.index
    out = bytearray()
    for i in range(n):
        out += raw_frame(T_HEADERS, F_END_STREAM | F_END_HEADERS, 2 * i + 1, c.req_block("GET", path))
    c.send(bytes(out))
    deadline = time.monotonic() + 2
    heads = 0
    while True:
        ev = c.event(deadline=deadline)
        if ev == "timeout":
            break
        if ev == "closed":
            return f"server closed the zero-window connection ({heads} responses started)"
        if isinstance(ev, hf.HeadersFrame):
            heads += 1
        if isinstance(ev, hf.DataFrame) and ev.data:
            raise CaseFail(f"server sent {len(ev.data)} DATA octets into a zero window")
    return f"{heads}/{n} responses started, held 2 s"


@attack("attack/empty-data", "10,000 empty DATA frames -> GOAWAY/close/RST")
def _(cfg, t, v):
    c = hs(cfg, t)
    c.request(1, "POST", end_stream=False)
    frame = raw_frame(T_DATA, 0, 1, b"")
    sent = 0
    reaction = None
    while sent < 10000:
        r = send_checked(c, frame * 500)
        if r == "close":
            reaction = Reaction("close")
            break
        sent += 500
        if r == "blocked":
            reaction = Reaction("server stopped reading")
            break
        reaction = poll_reaction(c, 0.002, watch_rst=True)
        if reaction:
            break
    if reaction is None:
        reaction = poll_reaction(c, 1.0, watch_rst=True)
    if reaction is None:
        raise CaseFail(f"accepted {sent} empty DATA frames without GOAWAY/close/RST")
    if reaction.kind == "goaway" and reaction.code not in CALM_CODES:
        raise CaseFail(f"{reaction} after {sent} frames")
    return f"{reaction} after <= {sent} frames"


# ----------------------------------------------------------------------------
# Runner
# ----------------------------------------------------------------------------

def hostport(s):
    host, sep, port = s.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {s!r}")
    return host.strip("[]"), int(port)


def run_case(cfg, cd, t):
    result = {}

    def target():
        try:
            note = cd["fn"](cfg, t)
            result["ok"] = note
        except CaseSkip as e:
            result["skip"] = str(e)
        except CaseFail as e:
            result["fail"] = str(e)
        except (ConnectionRefusedError, socket.timeout, TimeoutError) as e:
            result["fail"] = f"{type(e).__name__}: {e}"
        except Exception as e:  # noqa: BLE001
            result["fail"] = f"harness error {type(e).__name__}: {e}"

    limit = cfg.timeout * 3 + 3
    if cd["group"] == "attack":
        limit = 25
    elif cd["group"] == "http":
        limit = max(limit, 20)
    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(limit)
    if th.is_alive():
        return "fail", f"case did not finish within {limit:.0f} s"
    if "skip" in result:
        return "skip", result["skip"]
    if "fail" in result:
        return "fail", result["fail"]
    return "pass", result.get("ok")


def main(argv=None):
    ap = argparse.ArgumentParser(description="HTTP/2 conformance and attack checks (h2spec stand-in)")
    ap.add_argument("--h2c", type=hostport, help="HOST:PORT for h2c with prior knowledge")
    ap.add_argument("--h2", type=hostport, help="HOST:PORT for TLS with ALPN h2")
    ap.add_argument("--h1", type=hostport,
                    help="HOST:PORT for plain HTTP/1.1 (the attack victim; default: the h2c port)")
    ap.add_argument("--pid", type=int, help="server PID: checked alive, VmRSS bounded during attacks")
    ap.add_argument("--only", help="run only cases whose 'id title' matches this regex")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--attacks", dest="attacks", action="store_true", default=True)
    g.add_argument("--no-attacks", dest="attacks", action="store_false")
    ap.add_argument("--host", help=":authority / SNI name (default: HOST:PORT as given)")
    ap.add_argument("--timeout", type=float, default=2.0, help="per-case wait in seconds (default 2)")
    ap.add_argument("--index", default="/files/index.html", help="an existing small file")
    ap.add_argument("--missing", default="/files/nope.html", help="a path that is 404")
    ap.add_argument("--login", default="/login", help="the login path (POST only)")
    ap.add_argument("--post", help="a path whose handler reads the whole request body before "
                    "answering, for the cases that keep a POST stream open (default: --login, "
                    "or --index with --no-site)")
    ap.add_argument("--login-body", default="user=alice&password=wonderland",
                    help="form body for POST --login")
    ap.add_argument("--big", help="a file > 64 KiB (e.g. /files/1m.bin) for the flow-control GET")
    ap.add_argument("--no-site", action="store_true", help="skip the cases that need /login")
    ap.add_argument("--strict", action="store_true",
                    help="fail on a GOAWAY/RST_STREAM with an unexpected error code even if the "
                    "connection then closes (h2spec lets such cases pass)")
    ap.add_argument("--accept-4xx", action="store_true",
                    help="let a 4xx answer (without RST_STREAM) pass the stream-error cases")
    ap.add_argument("--known", action="append", default=[], metavar="ID",
                    help="a case the server is known to fail (repeatable; say why where it is "
                         "passed): its failure is printed KNOWN and not counted, and its passing "
                         "is a failure (UNEXPECTED PASS), so that the list is kept true")
    ap.add_argument("-v", "--verbose", action="store_true", help="print notes of passing cases")
    try:
        cfg = ap.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    cfg.targets = {}
    if cfg.post is None:
        cfg.post = cfg.index if cfg.no_site else cfg.login
    if cfg.h2c:
        cfg.targets["h2c"] = cfg.h2c
    if cfg.h2:
        cfg.targets["h2"] = cfg.h2
    if not cfg.targets:
        sys.stderr.write("h2check: give --h2c HOST:PORT and/or --h2 HOST:PORT\n")
        return 2
    try:
        only = re.compile(cfg.only) if cfg.only else None
    except re.error as e:
        sys.stderr.write(f"h2check: bad --only regex: {e}\n")
        return 2
    reachable = []
    for t, (host, port) in cfg.targets.items():
        try:
            socket.create_connection((host, port), timeout=3).close()
            reachable.append(t)
        except OSError as e:
            sys.stderr.write(f"h2check: cannot connect to {t} {host}:{port}: {e}\n")
    if not reachable:
        return 2

    passed = failed = skipped = known = 0
    known_ids = set(cfg.known)
    for t in cfg.targets:
        for cd in CASES:
            if t not in cd["transports"]:
                continue
            if cd["group"] == "attack" and not cfg.attacks:
                continue
            if cd["site"] and cfg.no_site:
                continue
            if only and not only.search(f"{cd['id']} {cd['title']}"):
                continue
            status, why = run_case(cfg, cd, t)
            if cd["id"] in known_ids and status != "skip":
                if status == "pass":
                    failed += 1
                    print(f"FAIL {cd['id']} {t} {cd['title']}: UNEXPECTED PASS of a --known case",
                          flush=True)
                else:
                    known += 1
                    print(f"KNOWN {cd['id']} {t} {cd['title']}: {why}", flush=True)
                continue
            if status == "pass":
                passed += 1
                shown = cfg.verbose or cd["group"] == "attack" or str(why).startswith("lenient")
                extra = f" ({why})" if why and shown else ""
                print(f"PASS {cd['id']} {t} {cd['title']}{extra}", flush=True)
            elif status == "skip":
                skipped += 1
                print(f"SKIP {cd['id']} {t} {cd['title']}: {why}", flush=True)
            else:
                failed += 1
                print(f"FAIL {cd['id']} {t} {cd['title']}: {why}", flush=True)
    if known:
        print(f"{known} known failures (--known), not counted")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
