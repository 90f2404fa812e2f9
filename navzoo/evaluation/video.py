"""MP4 videos that play in browsers: H.264 (libx264 through PyAV), yuv420p, the index at the front."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import av
import numpy as np

from navzoo.errors import ConfigError


def write_mp4(frames: Iterable[np.ndarray], path: str | Path, fps: int = 10) -> Path:
    """Encode RGB uint8 frames [H, W, 3] of one constant, even size into `path`; returns the path.

    Browsers only decode 4:2:0 H.264, which needs even sides; `+faststart` puts the index first so a
    page can start playing before the whole file has arrived.
    """
    if fps <= 0:
        raise ConfigError("fps", fps, "a positive number of frames per second")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        _encode(frames, tmp, fps)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(path)
    return path


def _encode(frames: Iterable[np.ndarray], path: Path, fps: int) -> None:
    with av.open(str(path), mode="w", format="mp4", options={"movflags": "+faststart"}) as container:
        stream = None
        for frame in frames:
            frame = np.ascontiguousarray(frame)
            if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
                raise ConfigError("frame", f"{frame.dtype} {frame.shape}", "uint8 RGB images [H, W, 3]")
            if stream is None:
                height, width = frame.shape[:2]
                if height % 2 or width % 2:
                    raise ConfigError("frame size", (height, width), "even height and width (H.264 4:2:0)")
                stream = container.add_stream("libx264", rate=fps)
                stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
                stream.options = {"crf": "23", "preset": "medium"}
            elif frame.shape[:2] != (stream.height, stream.width):
                raise ConfigError(
                    "frame size", frame.shape[:2], f"{(stream.height, stream.width)} for every frame"
                )
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        if stream is None:
            raise ConfigError("frames", 0, "at least one frame")
        container.mux(stream.encode())  # flush the encoder's delayed frames
