"""Pictures of a replay, step by step: the top-down map, the agent's camera views and one composed frame.

`ReplayView(replay)` builds a one-environment simulator of the replay's episode once (navzoo's scene or a
scanned mesh, with its navigation grid or navmesh) and the shortest path; a step's camera views are
re-rendered in it when first shown (milliseconds), and the last few are kept. Step t is the pose before the
agent's t-th action; step T (the episode length) is where the episode ended. On scanned meshes the map shows
the storey the agent is on at that step. The demo shows these pictures, and `frame()` images (constant, even
size) can be encoded into a video.
"""

import dataclasses
import math
import threading
from collections import OrderedDict

import matplotlib
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from navzoo.errors import ConfigError
from navzoo.evaluation.replay import Replay, observe_steps, replay_sim
from navzoo.evaluation.scene_maps import maps_of_size
from navzoo.evaluation.topdown import draw_episode
from navzoo.sim.config import ACTION_NAMES
from navzoo.tasks import get_task

MAP_PIXELS = 640  # the longer side of the map image, roughly (whole pixels per scene cell)
VIEW_PIXELS = 256  # camera views are upscaled by a whole factor to about this height
# Rendered steps kept per view: enough to go back and forth around a step without re-rendering, and
# few enough that a view stays small (8 steps of 256x256 depth and RGB are 3 MB).
FRAME_CACHE = 8
BLIND_VIEW = (64, 64)  # a blind agent sees nothing; its replay is shown with a depth camera of this size
DEPTH_COLORMAP = "viridis"
FRAME_SIZE = (480, 864)  # (height, width) of `frame()`: even, as h264 needs
BACKGROUND = (24, 26, 30)
TEXT = (235, 235, 235)


class ReplayView:
    """Renders a replay's steps. Images are uint8 [H, W, 3]."""

    def __init__(self, replay: Replay, device: str = "cpu"):
        """ReplayError if the replay's scanned mesh is missing (replay.check_scene_files)."""
        self.replay, self.device = replay, device
        config, episode = replay.sim_config, replay.episode
        self.task = config.task
        self.blind = not config.sensors
        self._shown = replay
        if self.blind:
            self._shown = dataclasses.replace(
                replay, sim_config=config.replace(sensors=("depth",), resolution=BLIND_VIEW)
            )
        self._names = [name for name in ("depth", "rgb") if name in self._shown.sim_config.sensors]
        self._sim = replay_sim(self._shown, device=device)
        self._maps = maps_of_size(self._sim, 0, MAP_PIXELS)
        # Only PointGoal has a goal to draw; Flee and Explore episodes reuse the start of a PointGoal one.
        self.goal = episode.goal if get_task(self.task).has_goal else None
        self.path = None
        if self.goal is not None:
            field = int(self._sim.scenes.episodes["field"][0])  # the episode's distance field to its goal
            self.path = self._maps.shortest_path(0, field, episode.start, self._floor(0))
        self._frames: OrderedDict[int, dict[str, np.ndarray]] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()  # a page's events may draw the same view at once
        self._render_lock = threading.Lock()  # one simulator renders one step at a time
        self._cumulative = np.cumsum(np.asarray(replay.rewards, dtype=np.float64))

    @property
    def num_steps(self) -> int:
        return self.replay.num_steps

    @property
    def label(self) -> str:
        return self.replay.agent

    def map_image(self, step: int) -> np.ndarray:
        """The scene from above: shortest path, the trajectory up to `step` and the pose at `step`."""
        t = self._check(step)
        return draw_episode(
            self._maps.canvas(0, self._floor(t)),
            self.replay.positions[: t + 1],
            self.goal,
            self.path,
            self.replay.headings[: t + 1],
            success_radius=self.replay.sim_config.success_distance,
        )

    def _floor(self, t: int) -> float:
        """The floor height under the agent at step t (scanned meshes; 0 in navzoo's one-storey scenes)."""
        heights = self.replay.heights
        return 0.0 if heights is None else float(heights[t])

    def observation_images(self, step: int) -> dict[str, np.ndarray]:
        """The camera views at `step` by sensor name (depth colour-mapped), upscaled to about VIEW_PIXELS."""
        images = {}
        for name, frame in self._camera_frames(self._check(step)).items():
            factor = max(1, round(VIEW_PIXELS / frame.shape[1]))
            images[name] = np.repeat(np.repeat(frame, factor, 0), factor, 1)
        return images

    def view_names(self) -> list[str]:
        """Captions of the views, in `observation_images` order."""
        suffix = " (not an input of this blind agent)" if self.blind else ""
        return [name + suffix for name in self._names]

    def _camera_frames(self, t: int) -> dict[str, np.ndarray]:
        """The colour images of step t's cameras, rendered now unless among the last FRAME_CACHE shown."""
        with self._lock:
            if t in self._frames:
                self._frames.move_to_end(t)
                return self._frames[t]
        with self._render_lock:
            rendered = observe_steps(self._sim, self._shown, [t])
        frames = {name: _colour(name, rendered[name][0].cpu().numpy()) for name in self._names}
        with self._lock:
            self._frames[t] = frames
            while len(self._frames) > FRAME_CACHE:
                self._frames.popitem(last=False)
        return frames

    def step_info(self, step: int) -> dict:
        """What happened at `step`: the action taken there, its reward, the value estimate and the return.

        At the last step (the end pose) no action is taken: action, reward and value are None."""
        t = self._check(step)
        replay = self.replay
        acting = t < self.num_steps
        probs = None
        if acting and replay.action_probs is not None:
            probs = {_action_name(a): float(p) for a, p in enumerate(replay.action_probs[t])}
        return {
            "step": t,
            "num_steps": self.num_steps,
            "action": _action_name(int(replay.actions[t])) if acting else None,
            "action_probs": probs,
            "value": float(replay.values[t]) if acting and replay.values is not None else None,
            "reward": float(replay.rewards[t]) if acting else None,
            # the return after this step's reward (at the end pose: the episode's return)
            "cumulative_reward": float(self._cumulative[min(t, self.num_steps - 1)])
            if self.num_steps
            else 0.0,
            "position": tuple(float(v) for v in replay.positions[t]),
            "heading_deg": math.degrees(float(replay.headings[t])),
        }

    def frame(self, step: int, size: tuple[int, int] = FRAME_SIZE) -> np.ndarray:
        """Map, views and a caption in one image of exactly `size` (height, width), both even."""
        height, width = size
        if height % 2 or width % 2 or height < 120 or width < 240:
            raise ConfigError("size", size, "(height, width), both even, at least (120, 240)")
        t = self._check(step)
        canvas = Image.new("RGB", (width, height), BACKGROUND)
        draw = ImageDraw.Draw(canvas)
        caption = max(16, height // 18)
        pad = max(4, height // 80)
        # Pillow without FreeType gives its bitmap font, which has no `size` and ignores the one asked for.
        font_size = int(caption * 0.6)
        font = ImageFont.load_default(size=font_size)
        views = list(zip(self.view_names(), self.observation_images(t).values(), strict=True))
        box_w = width // 3 - pad
        box_h = (height - caption - pad * (len(views) + 1)) // max(len(views), 1)
        y = pad
        for name, image in views:
            placed = _fit(image, box_w, box_h, Image.Resampling.NEAREST)
            x = width - pad - placed.width
            canvas.paste(placed, (x, y))
            label = name.split(" ")[0]
            draw.rectangle(
                (x, y, x + draw.textlength(label, font=font) + 8, y + font_size + 6), fill=BACKGROUND
            )
            draw.text((x + 4, y + 3), label, fill=TEXT, font=font)
            y += placed.height + pad
        map_w = width - (box_w + pad if views else 0) - 2 * pad
        placed = _fit(self.map_image(t), map_w, height - caption - 2 * pad, Image.Resampling.BILINEAR)
        canvas.paste(
            placed,
            (pad + (map_w - placed.width) // 2, pad + (height - caption - 2 * pad - placed.height) // 2),
        )
        text = self.caption(t)
        while text and draw.textlength(text, font=font) > width - 2 * pad:  # long agent names
            text = text[:-2] + "…"
        draw.text((pad, height - caption + (caption - font_size) // 2), text, fill=TEXT, font=font)
        return np.asarray(canvas)

    def caption(self, step: int) -> str:
        info = self.step_info(step)
        parts = [self.label, f"step {info['step']}/{info['num_steps']}"]
        if info["action"] is not None:
            parts.append(f"{info['action']}  reward {info['reward']:+.3f}")
        if info["value"] is not None:
            parts.append(f"value {info['value']:+.2f}")
        parts.append(f"return {info['cumulative_reward']:+.2f}")
        if info["action"] is None:  # the end: the episode's outcome
            parts.append(summary_line(self.replay.metrics, self.task))
        return "   ".join(parts)

    def _check(self, step) -> int:
        if isinstance(step, float) and step.is_integer():
            step = int(step)
        if not isinstance(step, int | np.integer) or not 0 <= step <= self.num_steps:
            raise ConfigError("step", step, f"an integer in 0 .. {self.num_steps} (the replay's poses)")
        return int(step)


def summary_line(metrics: dict, task: str) -> str:
    """The episode's headline metrics (Task.headline), as far as the replay has them."""
    shown = []
    for key, label, fmt in get_task(task).headline:
        value = metrics.get(key)
        if isinstance(value, int | float) and math.isfinite(value):
            shown.append(f"{label} {fmt.format(value)}")
    return "  ".join(shown)


def _action_name(action: int) -> str:
    return ACTION_NAMES[action] if 0 <= action < len(ACTION_NAMES) else f"action {action}"


def _colour(name: str, frames: np.ndarray) -> np.ndarray:
    """uint8 RGB images [..., H, W, 3]: depth through a colormap, RGB unchanged."""
    if name == "rgb":
        return frames.astype(np.uint8)
    lut = (matplotlib.colormaps[DEPTH_COLORMAP](np.linspace(0, 1, 256))[:, :3] * 255).astype(np.uint8)
    return lut[np.clip(np.rint(frames[..., 0] * 255), 0, 255).astype(np.uint8)]


def _fit(image: np.ndarray, width: int, height: int, resample) -> Image.Image:
    """`image` scaled to fit in width x height, keeping its aspect ratio."""
    h, w = image.shape[:2]
    scale = min(width / w, height / h)
    return Image.fromarray(image).resize((max(1, int(w * scale)), max(1, int(h * scale))), resample)
