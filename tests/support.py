"""Helpers the tests share (the fixtures are in conftest.py): small hand-built scenes and a depth render of
them, free ports, random observations, the overrides of a policy distillation, a laid-out Hugging Face
cache, a loopback release server, huggingface_hub's HTTP transport pointed at a handler, and navzoo's scenes
exported as scanned meshes."""

import contextlib
import hashlib
import os
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

import httpx2
import huggingface_hub
import numpy as np
import torch

# Not re-exported at the top level; the default client and its offline check live here.
from huggingface_hub.utils._http import default_client_factory, hf_request_event_hook

from navzoo.interop.habitat_scenes import CONFIG_NAME, export_scenes
from navzoo.sim.render import Camera, SceneAtlas, cast
from navzoo.sim.scenes import Scene

CEILING = 2.5
EYE = 1.25


def box_room(size_cells: int = 16) -> np.ndarray:
    """Heights of an empty square room with walls on its border (0.25 m cells)."""
    heights = np.zeros((size_cells, size_cells), dtype=np.float32)
    heights[0, :] = heights[-1, :] = heights[:, 0] = heights[:, -1] = CEILING
    return heights


def atlas_of(scene: Scene) -> SceneAtlas:
    return SceneAtlas.of_scene(scene)


def render_depth(
    heights: np.ndarray, pos, heading: float, size: int = 16, hfov: float = 90.0, ceiling: float = CEILING
) -> np.ndarray:
    """Metric z-depth [H, W] (top row first) seen from `pos` facing `heading` in a scene of these heights."""
    scene = Scene.from_arrays(heights, ceiling)
    camera = Camera(size, size, hfov, 30.0, torch.device("cpu"))
    hits, _ = cast(
        atlas_of(scene),
        camera,
        torch.zeros(1, dtype=torch.long),
        torch.tensor([pos], dtype=torch.float32),
        torch.tensor([heading]),
        EYE,
        False,
    )
    return hits.z[0].T.flip(0).numpy()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def random_observations(config, n: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """A batch of random observations with the sensors, resolution and dtypes a policy config expects."""
    from navzoo.models import GOAL_SENSOR

    obs = {GOAL_SENSOR: torch.rand(n, 2, generator=generator) * 3}
    if "depth" in config.sensors:
        obs["depth"] = torch.rand(n, *config.resolution, 1, generator=generator)
    if "rgb" in config.sensors:
        obs["rgb"] = torch.randint(0, 256, (n, *config.resolution, 3), generator=generator, dtype=torch.uint8)
    return obs


def put_in_hf_cache(
    cache: Path, repo_id: str, folder: Path, commit: str, refs: tuple[str, ...] = ("main",)
) -> None:
    """Lay out `folder` as huggingface_hub's cache does: blobs/, snapshots/<commit>/ symlinks, refs/<name>."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    for file in folder.iterdir():
        blob = repo / "blobs" / hashlib.sha256(file.read_bytes()).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(file, blob)
        link = repo / "snapshots" / commit / file.name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir(exist_ok=True)
    for ref in refs:
        (repo / "refs" / ref).write_text(commit)


class ReleaseServer:
    """A loopback HTTP server (127.0.0.1 only) for a folder laid out like habitat's DD-PPO release folder.

    It serves the files of `root` with Content-Length, honours `Range: bytes=N-` with 206 and
    Content-Range, and records every request as (file name, Range header). `cut[name] = n` makes the next
    response for `name` stop after n body bytes and drop the connection; `fail[name] = status` answers that
    status until removed (after the cut response, where both are set).
    """

    def __init__(self, root: Path):
        import http.server
        import threading

        self.root, self.requests, self.cut, self.fail = root, [], {}, {}
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                name = self.path.rsplit("/", 1)[-1]
                server.requests.append((name, self.headers.get("Range")))
                path = server.root / name
                if name in server.fail and name not in server.cut:
                    self.send_error(server.fail[name])
                    return
                if not path.is_file():
                    self.send_error(404)
                    return
                data = path.read_bytes()
                start = int(self.headers["Range"][len("bytes=") : -1]) if self.headers.get("Range") else 0
                self.send_response(206 if start else 200)
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                body = data[start:]
                if name in server.cut:
                    body = body[: server.cut.pop(name)]
                    self.close_connection = True
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/ddppo-models/"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextlib.contextmanager
def hub_transport(handler):
    """huggingface_hub's HTTP requests answered by `handler` (a request -> response function) for the
    duration. The client keeps huggingface_hub's own request hook, so offline mode still refuses at once,
    and the library's default client comes back afterwards: a bare httpx client left behind would have
    no offline check and no timeout, and later tests would wait on the network."""
    huggingface_hub.set_client_factory(
        lambda: httpx2.Client(
            transport=httpx2.MockTransport(handler),
            event_hooks={"request": [hf_request_event_hook]},
            follow_redirects=True,
        )
    )
    huggingface_hub.close_session()  # drop a client built before the factory was set
    try:
        yield
    finally:
        huggingface_hub.set_client_factory(default_client_factory)
        huggingface_hub.close_session()


@dataclass(frozen=True)
class MeshExport:
    """navzoo's val scenes exported as a habitat user's data folder: the options `navzoo eval` and
    SimConfig take to run its episodes on the meshes."""

    episodes_file: Path
    scenes_dir: Path
    scene_dataset: Path

    def sim_fields(self) -> dict[str, str]:
        """SimConfig's episodes_file, scenes_dir and scene_dataset."""
        return {name: str(getattr(self, name)) for name in ("episodes_file", "scenes_dir", "scene_dataset")}

    def options(self) -> list[str]:
        """The same as command-line options."""
        return [
            part
            for name, value in self.sim_fields().items()
            for part in (f"--{name.replace('_', '-')}", value)
        ]


def export_val_meshes(out: Path, episodes: int) -> MeshExport:
    """The first apartment-s val scene and its first `episodes` episodes (on its navmesh), in `out`."""
    export_scenes(out, split="val", families=("apartment-s",), count=1, episodes_per_scene=episodes)
    scenes = out / "scene_datasets"
    return MeshExport(
        out / "datasets" / "pointnav" / "navzoo" / "v1" / "val" / "val.json.gz",
        scenes,
        scenes / "navzoo" / CONFIG_NAME,
    )


def steps_after_a_resume_match(config, actions: torch.Tensor, checkpoint_after: int) -> list[tuple]:
    """Step a BatchSim of `config` through `actions` [T, N], checkpointing it (through torch.save) after
    `checkpoint_after` steps; a second simulator loaded from the checkpoint takes the remaining actions.
    Asserts that both give the same observations, rewards, dones and metrics, bit for bit, and that a mesh
    stream swapped a scene in after the checkpoint; returns the first simulator's steps after it."""
    import io

    from navzoo.sim import BatchSim

    sim = BatchSim(config)
    sim.reset()
    for a in actions[:checkpoint_after]:
        sim.step(a)
    buffer = io.BytesIO()
    torch.save(sim.state_dict(), buffer)
    rotated = sim.meshes.rotation.next_scene if sim.meshes is not None else None
    first = [sim.step(a) for a in actions[checkpoint_after:]]
    if sim.meshes is not None:
        assert sim.meshes.rotation.next_scene > rotated  # a mesh was swapped in after the checkpoint
    buffer.seek(0)
    resumed = BatchSim(config)
    resumed.load_state_dict(torch.load(buffer, weights_only=True))
    second = [resumed.step(a) for a in actions[checkpoint_after:]]
    for (obs_a, reward_a, done_a, info_a), (obs_b, reward_b, done_b, info_b) in zip(
        first, second, strict=True
    ):
        assert obs_a.keys() == obs_b.keys()
        for key in obs_a:
            assert torch.equal(obs_a[key], obs_b[key]), key
        assert torch.equal(reward_a, reward_b) and torch.equal(done_a, done_b)
        for key in info_a["metrics"]:
            assert torch.equal(info_a["metrics"][key], info_b["metrics"][key]), key
    return first


def distilling(model: str) -> list[str]:
    """Overrides turning a training preset's teacher into the policy `model`, each step weighing the same."""
    return [
        "imitation.teacher=policy",
        f"imitation.teacher_model={model}",
        "imitation.inflection_weight=1",
        "imitation.early_stop_weight=0",
    ]
