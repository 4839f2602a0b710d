"""The servers measured: Debian's nginx and csserver, one worker each (and nginx as
a reverse proxy in front of csserver: the cost of following a target's upstream
connections, `--targets nginx-proxy`); and, for
the JVM pause probes' cost, Debian's OpenJDK 17 running the JDK's own HttpServer
(tests/integration/jvm/CsPauses.java) with pauses on a schedule."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from common import free_port, pin, wait_line, wait_port


class Nginx:
    """Debian's nginx, one worker, a small static file, private config."""

    name = "nginx"

    def __init__(self, procs, build=None, pinned=True, upstream_port=None):
        self.procs = procs
        self.dir = tempfile.mkdtemp(prefix="connscope-bench-nginx-")
        os.chmod(self.dir, 0o755)  # the worker runs as nobody and reads html/
        self.port = free_port()
        os.makedirs(f"{self.dir}/html")
        os.makedirs(f"{self.dir}/logs")
        os.makedirs(f"{self.dir}/tmp")
        with open(f"{self.dir}/html/index.html", "w") as f:
            f.write("<html><body>connscope bench: a small static file.</body></html>\n")
        conf = f"""
worker_processes 1;
daemon off;
master_process on;
pid {self.dir}/nginx.pid;
error_log {self.dir}/logs/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {self.dir}/tmp;
    proxy_temp_path {self.dir}/tmp;
    fastcgi_temp_path {self.dir}/tmp;
    uwsgi_temp_path {self.dir}/tmp;
    scgi_temp_path {self.dir}/tmp;
    keepalive_requests 1000000;
    {self.upstream_block(upstream_port)}
    server {{
        listen 127.0.0.1:{self.port} backlog=4096;
        root {self.dir}/html;
        {self.proxy_location(upstream_port)}
    }}
}}
"""
        with open(f"{self.dir}/nginx.conf", "w") as f:
            f.write(conf)
        self.proc = procs.start([*pin("server", pinned), "nginx", "-p", self.dir, "-c",
                                 f"{self.dir}/nginx.conf"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_port(self.port):
            raise RuntimeError("nginx did not start: see " + f"{self.dir}/logs/error.log")
        # The worker is the master's only child: bpftrace filters on it.
        self.worker = None
        end = time.monotonic() + 5
        while not self.worker and time.monotonic() < end:
            try:
                with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                    kids = f.read().split()
                self.worker = int(kids[0]) if kids else None
            except OSError:
                pass
            time.sleep(0.05)
        self.pid = self.worker
        self.pids = [self.proc.pid] + ([self.worker] if self.worker else [])

    @staticmethod
    def upstream_block(port):
        return f"upstream backend {{ server 127.0.0.1:{port}; keepalive 16; }}" if port else ""

    @staticmethod
    def proxy_location(port):
        return ('location / { proxy_pass http://backend; proxy_http_version 1.1; '
                'proxy_set_header Connection ""; }') if port else ""

    def close(self):
        self.procs.stop(self.proc, signal.SIGQUIT)
        shutil.rmtree(self.dir, ignore_errors=True)


class CsServer:
    """The reference server: one epoll worker, like nginx's one worker."""

    name = "csserver"

    def __init__(self, procs, build, extra=(), port=0, pinned=True):
        self.procs = procs
        self.proc = procs.start([*pin("server", pinned), f"{build}/csserver", "--port", str(port),
                                 "--workers", "1", "--backlog", "4096", "--quiet", *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        m = wait_line(self.proc.stdout, r"listening on 127\.0\.0\.1:(\d+) .*pid=(\d+)", 10)
        if not m:
            raise RuntimeError("csserver did not start")
        self.port = int(m.group(1))
        self.pid = int(m.group(2))
        self.pids = [self.pid]

    def close(self):
        self.procs.stop(self.proc, signal.SIGTERM)


class NginxProxy(Nginx):
    """nginx proxying every request to csserver on keep-alive upstream connections: the
    target (nginx) follows them, an exchange per request. The backend shares the
    server's CPU; only nginx's CPU is the target's."""

    name = "nginx-proxy"

    def __init__(self, procs, build, pinned=True):
        self.backend = CsServer(procs, build, pinned=pinned)
        super().__init__(procs, build, pinned, upstream_port=self.backend.port)

    def close(self):
        super().close()
        self.backend.close()


class JavaServer:
    """CsPauses (tests/integration/jvm/CsPauses.java) on Debian's OpenJDK 17: the JDK's
    HttpServer on a pool of 4 threads, and a JVM that pauses on its own clock, whatever
    the load: SerialGC with a live set of live_mb MB, a full collection forced every
    gc_ms, a thread dump (the VM operation ThreadDump, no collection) every dump_ms.
    The JVM logs every collection and safepoint (-Xlog:gc,safepoint, each line stamped
    with CLOCK_MONOTONIC ns: the probes' clock) to self.log."""

    name = "java"

    def __init__(self, procs, java, classes, log, schedule, pinned=True):
        self.procs = procs
        self.port = free_port()
        self.log = log
        live_mb, gc_ms, dump_ms = schedule
        self.proc = procs.start([*pin("server", pinned), java, "-XX:+UseSerialGC", "-Xms256m", "-Xmx256m",
                                 "-Dsun.net.httpserver.nodelay=true", f"-Xlog:gc,safepoint:file={log}:tn",
                                 "-cp", classes, "CsPauses", str(self.port), "4", str(live_mb), str(gc_ms),
                                 str(dump_ms), "0"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_port(self.port, 20):
            self.close()
            raise RuntimeError(f"java CsPauses did not listen on {self.port}")
        self.pid = self.proc.pid
        self.pids = [self.pid]

    def close(self):
        self.procs.stop(self.proc, signal.SIGTERM)


TARGETS = [Nginx, CsServer, NginxProxy]


def new_target(target_cls, procs, args, pinned=True):
    return target_cls(procs, args.build, pinned=pinned)
