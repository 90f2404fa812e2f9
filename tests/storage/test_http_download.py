"""Downloads from a misbehaving server (a real HTTP server on 127.0.0.1): one that trickles bytes is
abandoned at the speed floor and the next call resumes; one that answers a Range request from another
offset, or sends more than the file, restarts the download from zero, so the .part never outgrows the file."""

import http.server
import threading
import time

import pytest

from navzoo.storage.http_download import DownloadError, MinimumSpeed, download

PAYLOAD = bytes(range(256)) * 64  # 16 KiB


class Misbehaving(http.server.BaseHTTPRequestHandler):
    """Serves PAYLOAD in the server's `mode`: "trickle" (8 bytes, then a byte every 0.1 s), "from-zero"
    (a 206 that ignores the Range and starts at byte 0), "oversize" (a 206 whose body runs past the file's
    end), or "good" (honours Range). Each request's Range header is recorded."""

    def do_GET(self):
        server = self.server
        server.ranges.append(self.headers.get("Range"))
        start = int(self.headers["Range"][6:-1]) if self.headers.get("Range") else 0
        mode = server.mode
        if mode == "from-zero" and start:
            body = PAYLOAD
            self.send_response(206)
            self.send_header("Content-Range", f"bytes 0-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
        elif mode == "oversize" and start:
            body = PAYLOAD[start:] + PAYLOAD
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
        else:
            body = PAYLOAD[start:]
            self.send_response(206 if start else 200)
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if mode == "trickle":
            self.wfile.write(body[:8])
            for byte in body[8:40]:  # then stop: the client gives up long before
                self.wfile.flush()
                time.sleep(0.1)
                self.wfile.write(bytes([byte]))
            return
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Misbehaving)
    httpd.mode, httpd.ranges = "good", []
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def url(server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/file.pth"


def test_a_trickling_server_is_abandoned_at_the_floor_and_the_next_call_resumes(server, tmp_path):
    server.mode = "trickle"
    dest = tmp_path / "file.pth"
    started = time.monotonic()
    with pytest.raises(DownloadError, match=r"abandoned: .* below the floor of 100 bytes/s over 1 s"):
        download(url(server), dest, MinimumSpeed(bytes_per_s=100, window_s=1.0))
    assert time.monotonic() - started < 2.5
    part = dest.with_name("file.pth.part")
    kept = part.stat().st_size
    assert 8 <= kept < len(PAYLOAD) and not dest.exists()
    server.mode = "good"
    download(url(server), dest, MinimumSpeed(bytes_per_s=100, window_s=1.0))
    assert dest.read_bytes() == PAYLOAD and server.ranges[-1] == f"bytes={kept}-"


@pytest.mark.parametrize("mode", ["from-zero", "oversize"])
def test_a_range_answer_that_does_not_continue_the_part_file_restarts_from_zero(server, tmp_path, mode):
    server.mode = mode
    dest = tmp_path / "file.pth"
    dest.with_name("file.pth.part").write_bytes(PAYLOAD[:1000])
    download(url(server), dest, MinimumSpeed())
    assert dest.read_bytes() == PAYLOAD
    assert server.ranges == ["bytes=1000-", None]  # the resume, then the whole file from zero


def test_the_speed_floor_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("NAVZOO_MIN_DOWNLOAD_SPEED", "2048")
    monkeypatch.setenv("NAVZOO_DOWNLOAD_WINDOW", "30")
    assert MinimumSpeed.from_environment() == MinimumSpeed(2048, 30)
    monkeypatch.setenv("NAVZOO_DOWNLOAD_WINDOW", "never")
    with pytest.raises(DownloadError, match="NAVZOO_DOWNLOAD_WINDOW='never' is not a positive number"):
        MinimumSpeed.from_environment()
