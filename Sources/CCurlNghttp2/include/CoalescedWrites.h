#ifndef HERALD_CCURL_COALESCED_WRITES_H
#define HERALD_CCURL_COALESCED_WRITES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// nghttp2's send callback (nghttp2_send_callback): libcurl's, which writes to the TLS connection.
typedef ssize_t (*herald_deliver_fn)(void *session, const uint8_t *data, size_t length, int flags, void *user_data);
/// libnghttp2's nghttp2_session_send, which hands each frame to the session's send callback.
typedef int (*herald_produce_fn)(void *session);

/// The send callback registered in libcurl's place (see coalesced_writes.c): inside
/// herald_coalesced_send it collects the frame in the session's outbox, else passes it on.
ssize_t herald_coalesced_collect(void *session, const uint8_t *data, size_t length, int flags, void *user_data);

/// nghttp2_session_send with the frames `produce` makes collected and handed to `deliver` in one
/// call; bytes `deliver` does not take go first next time. nghttp2_session_send's result. (Its
/// own nghttp2_session_send calls this with libnghttp2's and libcurl's; tests, with their own.)
int herald_coalesced_send(void *session, herald_produce_fn produce, herald_deliver_fn deliver);

/// 1 while bytes of `session` wait in its outbox for the socket, else 0.
int herald_coalesced_pending(void *session);

/// Drops `session`'s outbox, unsent bytes included: the session is gone (or a test is done with it).
void herald_coalesced_forget(void *session);


#endif
