"""Reading input: files, directories, globs and streams, their compression and framings (JSON
lines, length-prefixed protobuf, one document), the records they hold, and the byte ranges the
batch planner cuts a file into (``cuts``) and reads one at a time (``ranges``); the census of a
two-pass read. The only wing that knows what a length prefix is. Uses ``decode`` for the records.
"""
