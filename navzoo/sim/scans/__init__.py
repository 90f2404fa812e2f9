"""Scanned scenes (Gibson, MP3D, HM3D meshes): the stage in habitat's frame and its navigation mesh."""
