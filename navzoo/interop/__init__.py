"""navzoo in other tools' formats and APIs: habitat-sim scene datasets (with glTF meshes), gymnasium
environments, stable-baselines3, and an Embree reference of the renderer."""
