"""The OpenCL delegate: device choice, program cache, arena planning, launch lists and kernels.

Importing this package does not touch OpenCL; ``device.get_context()`` does, on first use.
"""
