"""Text embedders: the local model (ONNX Runtime or PyTorch) and OpenAI-compatible endpoints."""
