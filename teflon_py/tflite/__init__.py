"""The only code that knows the TFLite flatbuffer: reader (file -> IR) and builder (IR -> file)."""
