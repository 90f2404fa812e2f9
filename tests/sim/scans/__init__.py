"""Tests of navzoo.sim.scans."""
