#ifndef HERALD_CCURL_CLOSED_STREAMS_H
#define HERALD_CCURL_CLOSED_STREAMS_H

/// RST_STREAM frames libcurl asked for on the calling thread (see closed_streams.c): dropped,
/// because nghttp2 had already closed the stream, and passed on unchanged (a stream still
/// open, or a request not yet sent). Per thread, because a connection's libcurl calls all run
/// on its worker's thread: the worker reports its own share, free of other senders'.
void herald_closed_stream_resets_on_this_thread(unsigned long *dropped, unsigned long *passed);

#endif
