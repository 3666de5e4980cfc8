#ifndef HERALD_CCURL_SHIM_COUNTS_H
#define HERALD_CCURL_SHIM_COUNTS_H

/// What this target's files did on the calling thread so far. Per thread, because a
/// connection's libcurl calls all run on its worker's thread: a worker takes the difference over
/// its run, free of other senders'. How tests see each path taken.
typedef struct herald_shim_counts {
    /// RST_STREAM frames libcurl asked for (closed_streams.c): dropped, because nghttp2 had
    /// already closed the stream, and passed on (a stream still open, or a request not yet sent).
    unsigned long resets_dropped, resets_passed;
    /// Frames collected into outboxes and the writes made of them (coalesced_writes.c).
    unsigned long frames_collected, writes_made;
    /// Bodies nghttp2 took in more than one part, its flow-control window being smaller than the
    /// rest of the body (request_headers.c).
    unsigned long bodies_split;
    /// Answer header fields of registered requests taken from nghttp2 (apns-id, apns-unique-id)
    /// and kept from libcurl (every other one) (response_headers.c).
    unsigned long answer_fields_taken, answer_fields_dropped;
} herald_shim_counts;

void herald_shim_counts_on_this_thread(herald_shim_counts *counts);

#endif
