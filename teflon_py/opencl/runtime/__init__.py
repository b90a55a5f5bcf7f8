"""The device side: choosing a device, building programs, enqueuing launches."""
