"""Backends: packages above `static` that run a Program another way.

`d2s.static.backend` names them and imports one only when a program first
runs on it, so the default install never imports their libraries.
"""
