"""navzoo's version, in a module of its own: modules that `import navzoo` loads can read it from here,
before navzoo/__init__.py has finished."""

__version__ = "0.1.0"
