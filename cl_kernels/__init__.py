"""OpenCL C sources of the OpenCL delegate, shipped as package data and read via importlib.resources."""
