"""A bare HTTP/2 client that starts gRPC calls and never finishes their messages.

The Python twin of tests/raw_http2.cc (issue 33, N2): it sends the preface,
HEADERS for each call (HPACK literals, no Huffman) and a gRPC length prefix
announcing `message_bytes`, then as much of the message as the server's flow
control allows, never its last byte. It answers SETTINGS and PING, and
counts a stream as ended at RST_STREAM or at HEADERS with END_STREAM.
Every wait is bounded.
"""
import select
import socket
import struct
import time

DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0, 1, 3, 4, 6, 7, 8
END_STREAM, ACK, END_HEADERS = 1, 1, 4
MAX_FRAME = 16384
INITIAL_WINDOW_SIZE = 4


def _hpack_string(value: bytes) -> bytes:
    if len(value) < 127:
        return bytes([len(value)]) + value
    out, length = bytearray([127]), len(value) - 127
    while length >= 128:
        out.append((length % 128) | 128)
        length //= 128
    out.append(length)
    return bytes(out) + value


class Stream:
    def __init__(self, message_bytes: int, window: int):
        self.message_bytes = message_bytes
        self.window = window
        self.sent = 0
        self.ended = False


class RawHttp2Connection:
    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.setblocking(False)
        self.streams = {}
        self.next_stream = 1
        self.initial_window = 65535
        self.connection_window = 65535
        self.goaway = False
        self.input = b""
        self._write(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        self._frame(SETTINGS, 0, 0, b"")

    def close(self):
        self.sock.close()

    def _write(self, data: bytes):
        view, deadline = memoryview(data), time.monotonic() + 5
        while view and time.monotonic() < deadline:
            try:
                n = self.sock.send(view)
                view = view[n:]
            except BlockingIOError:
                select.select([], [self.sock], [], 0.01)
            except OSError:
                self.goaway = True
                return

    def _frame(self, kind: int, flags: int, stream: int, payload: bytes):
        head = struct.pack(">I", len(payload))[1:] + bytes([kind, flags])
        self._write(head + struct.pack(">I", stream & 0x7FFFFFFF) + payload)

    def start_call(self, path: str, headers, message_bytes: int) -> int:
        stream_id = self.next_stream
        self.next_stream += 2
        fields = [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "x"),
                  ("content-type", "application/grpc"), ("te", "trailers")] + list(headers)
        block = b"".join(b"\x00" + _hpack_string(k.encode()) + _hpack_string(v.encode())
                         for k, v in fields)
        self._frame(HEADERS, END_HEADERS, stream_id, block)
        stream = Stream(message_bytes, self.initial_window - 5)
        self.streams[stream_id] = stream
        self.connection_window -= 5
        self._frame(DATA, 0, stream_id, b"\x00" + struct.pack(">I", message_bytes))
        return stream_id

    def _read(self) -> bool:
        got = False
        for _ in range(64):
            try:
                chunk = self.sock.recv(65536)
            except BlockingIOError:
                break
            except OSError:
                self.goaway = True
                break
            if not chunk:
                self.goaway = True
                break
            self.input += chunk
            got = True
        while len(self.input) >= 9:
            length = int.from_bytes(self.input[0:3], "big")
            if len(self.input) < 9 + length:
                break
            kind, flags = self.input[3], self.input[4]
            stream = int.from_bytes(self.input[5:9], "big") & 0x7FFFFFFF
            self._handle(kind, flags, stream, self.input[9:9 + length])
            self.input = self.input[9 + length:]
        return got

    def _handle(self, kind, flags, stream_id, payload):
        stream = self.streams.get(stream_id)
        if kind == SETTINGS and not flags & ACK:
            for at in range(0, len(payload) - 5, 6):
                key, value = struct.unpack(">HI", payload[at:at + 6])
                if key == INITIAL_WINDOW_SIZE:
                    for s in self.streams.values():
                        s.window += value - self.initial_window
                    self.initial_window = value
            self._frame(SETTINGS, ACK, 0, b"")
        elif kind == PING and not flags & ACK:
            self._frame(PING, ACK, 0, payload)
        elif kind == WINDOW_UPDATE and len(payload) >= 4:
            increment = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
            if stream_id == 0:
                self.connection_window += increment
            elif stream:
                stream.window += increment
        elif kind == HEADERS and stream and flags & END_STREAM:
            stream.ended = True
        elif kind == RST_STREAM and stream:
            stream.ended = True
        elif kind == GOAWAY:
            self.goaway = True

    def _send_data(self) -> bool:
        any_sent = False
        for stream_id, s in self.streams.items():
            if s.ended:
                continue
            n = min(s.message_bytes - 1 - s.sent, self.connection_window, s.window, MAX_FRAME)
            if n <= 0:
                continue
            self._frame(DATA, 0, stream_id, b"x" * n)
            s.sent += n
            s.window -= n
            self.connection_window -= n
            any_sent = True
        return any_sent

    def ended(self) -> int:
        return sum(1 for s in self.streams.values() if s.ended)

    def sent(self) -> int:
        return sum(s.sent for s in self.streams.values())

    def pump(self, seconds: float):
        end = time.monotonic() + seconds
        while (not self.goaway and self.ended() < len(self.streams)
               and time.monotonic() < end):
            read = self._read()
            sent = self._send_data()
            if not read and not sent:
                select.select([self.sock], [], [], 0.01)
