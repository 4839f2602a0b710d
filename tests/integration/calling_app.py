#!/usr/bin/env python3
"""A blocking application server for the tests: a thread per HTTP
connection (http.server's ThreadingHTTPServer, keep-alive) whose handler
calls another server before it answers.

--redis-port P: Redis, on a connection of each thread's own, opened as
its client connects:
  GET /get       Redis GET (a fast call)
  GET /slow/MS   Redis EVAL of a Lua loop that keeps Redis busy MS ms
--redis-socket PATH: the same, on Redis's Unix socket.
--http-port P: an HTTP server, on a new connection for each call (GET /,
HTTP/1.0, read to its close); --connect-log FILE gets each call's connect
time in us, one a line, as the application timed it.

Prints "listening on PORT" once it listens; at SIGTERM, "calls N" (the
calls it made and read the answers of), then exits.

calling_app.py --slowlog --redis-port P prints the execution time (us) of
each EVAL in Redis's slow log, one a line: Redis's own time for each
script, without its wait behind other commands.
"""
import argparse
import http.server
import signal
import socket
import sys
import threading
import time

from resp_load import lua_eval

GET = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"

calls_lock = threading.Lock()
calls = 0


def read_reply(sock, buf):
    # The answers here are one line (":1", "$-1") or a bulk string of a line.
    while b"\r\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("Redis closed the connection")
        buf += chunk
    line, rest = buf.split(b"\r\n", 1)
    if line.startswith(b"$") and int(line[1:]) >= 0:
        need = int(line[1:]) + 2
        while len(rest) < need:
            rest += sock.recv(4096)
        rest = rest[need:]
    if line.startswith(b"-"):
        raise RuntimeError("Redis: " + line.decode())
    return rest


def call_http(port, connect_log):
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        connected = time.monotonic()
        sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
        while sock.recv(65536):
            pass
    if connect_log:
        with calls_lock:
            connect_log.write("%d\n" % round((connected - started) * 1e6))
            connect_log.flush()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    redis_port = 0
    redis_socket = None
    http_port = 0
    connect_log = None

    def setup(self):
        super().setup()
        self.redis = None
        if self.redis_socket:
            self.redis = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.redis.settimeout(10)
            self.redis.connect(self.redis_socket)
        elif self.redis_port:
            self.redis = socket.create_connection(("127.0.0.1", self.redis_port), timeout=10)
            self.redis.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def finish(self):
        super().finish()
        if self.redis:
            self.redis.close()

    def do_GET(self):
        global calls
        if self.http_port:
            call_http(self.http_port, self.connect_log)
        else:
            command = lua_eval(int(self.path[len("/slow/"):])) if self.path.startswith("/slow/") else GET
            self.redis.sendall(command)
            read_reply(self.redis, b"")
        with calls_lock:
            calls += 1
        # The answer in one write: headers and body written apart would leave
        # the body to Nagle's algorithm, waiting for the client's delayed ACK.
        body = b"ok\n"
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    def log_message(self, *args):
        pass


def read_resp(stream):
    # A whole RESP value from a file-like stream: the slow log's nested arrays.
    line = stream.readline().rstrip(b"\r\n")
    kind, rest = line[:1], line[1:]
    if kind == b"*":
        return [read_resp(stream) for _ in range(int(rest))]
    if kind == b"$":
        return None if int(rest) < 0 else stream.read(int(rest) + 2)[:-2]
    if kind == b":":
        return int(rest)
    if kind == b"-":
        raise RuntimeError("Redis: " + rest.decode())
    return rest


def print_slowlog(redis_port):
    with socket.create_connection(("127.0.0.1", redis_port), timeout=10) as sock:
        sock.sendall(b"*3\r\n$7\r\nSLOWLOG\r\n$3\r\nGET\r\n$5\r\n10000\r\n")
        entries = read_resp(sock.makefile("rb"))
    # Each entry: id, unix time, duration in us, the command's words, ...
    for entry in entries:
        if entry[3] and entry[3][0].upper() == b"EVAL":
            print(entry[2])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int)
    parser.add_argument("--redis-port", type=int)
    parser.add_argument("--redis-socket")
    parser.add_argument("--http-port", type=int)
    parser.add_argument("--connect-log")
    parser.add_argument("--slowlog", action="store_true")
    args = parser.parse_args()
    if args.slowlog:
        print_slowlog(args.redis_port)
        return
    if bool(args.redis_port or args.redis_socket) == bool(args.http_port):
        parser.error("give --redis-port (or --redis-socket) or --http-port")
    Handler.redis_port = args.redis_port or 0
    Handler.redis_socket = args.redis_socket
    Handler.http_port = args.http_port or 0
    Handler.connect_log = open(args.connect_log, "w") if args.connect_log else None
    # socketserver listens with a backlog of 5: its own queue would overflow first.
    http.server.ThreadingHTTPServer.request_queue_size = 128
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True

    def stop(signum, frame):
        print("calls %d" % calls, flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    print("listening on %d" % args.port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
