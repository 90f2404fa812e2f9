"""The Warp kernel of the mesh renderer's CUDA backend (navzoo.sim.scans.raycast): one thread per pixel of
every camera, a `wp.mesh_query_ray` against the mesh. Warp compiles it from its own typed dialect of
Python, whose types the type checker does not model, hence the rules switched off below for this module.
"""

# pyright: reportAttributeAccessIssue=false, reportArgumentType=false, reportGeneralTypeIssues=false
# pyright: reportAssignmentType=false, reportInvalidTypeForm=false

from __future__ import annotations


def warp_cast_kernel():
    """The Warp kernel, defined on first use so that importing this module never needs warp."""
    import warp as wp  # pyright: ignore[reportMissingImports]

    @wp.kernel
    def cast_rays(
        mesh: wp.uint64,
        eyes: wp.array(dtype=wp.vec3),  # type: ignore[valid-type]
        yaws: wp.array(dtype=wp.float32),  # type: ignore[valid-type]
        directions: wp.array(dtype=wp.vec3),  # type: ignore[valid-type]
        far: wp.float32,
        z: wp.array(dtype=wp.float32),  # type: ignore[valid-type]
        face: wp.array(dtype=wp.int32),  # type: ignore[valid-type]
        u: wp.array(dtype=wp.float32),  # type: ignore[valid-type]
        v: wp.array(dtype=wp.float32),  # type: ignore[valid-type]
    ):
        env, pixel = wp.tid()
        d = directions[pixel]
        c, s = wp.cos(yaws[env]), wp.sin(yaws[env])
        world = wp.vec3(c * d[0] + s * d[2], d[1], c * d[2] - s * d[0])  # forward component stays 1
        out = env * directions.shape[0] + pixel
        # t is in multiples of the direction's length: with a unit forward component, that is z-depth.
        hit = wp.mesh_query_ray(mesh, eyes[env], world, far)
        if hit.result:
            z[out] = hit.t
            face[out] = hit.face
            # Warp weighs the face's first and second vertices; Embree (and Hits) the second and third.
            u[out] = hit.v
            v[out] = 1.0 - hit.u - hit.v
        else:
            z[out] = far
            face[out] = -1
            u[out] = 0.0
            v[out] = 0.0

    return cast_rays
