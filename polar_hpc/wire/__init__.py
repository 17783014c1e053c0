"""What crosses processes: the msgspec Structs of messages and records, their codec, the run dir's layout, endpoint
files, CURVE keys and waits."""
