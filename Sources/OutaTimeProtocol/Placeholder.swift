// The frame codec, envelope types and error codes of protocol v1.
